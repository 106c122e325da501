import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { expectAccessible, expectClean, journey, startConsole, WAIT, type ConsoleSession } from '../support/browser'
import { codeFrom } from '../support/smtp'

/**
 * A new owner's first minutes (docs/auth.md): sign up with the code from the local SMTP server, get
 * a problem document's pointer shown next to its field, sign out, reset the password by mail, sign in.
 */

let c: ConsoleSession
const email = `owner-${Date.now().toString(36)}@example.test`
const PASSWORD = 'correct horse battery staple 42'
const NEW_PASSWORD = 'a longer and newer private passphrase'

beforeAll(async () => {
  c = await startConsole()
}, 120_000)
afterAll(() => c?.close())

/** The newest code mailed to `to` after `before` messages (the outbox is sent as the app would). */
async function mailedCode(before: number): Promise<string> {
  await c.app.deps.mail.idle()
  await c.app.deps.mail.dispatchDue()
  const mail = await c.smtp.waitForMail(email, (m) => c.smtp.to(email).indexOf(m) >= before, WAIT)
  return codeFrom(mail)
}

const heading = (page: Page, name: string) => page.getByRole('heading', { level: 1, name }).waitFor({ timeout: WAIT })

describe('a new owner', () => {
  test(
    'signs up with the emailed code, is told next to the field that the password is too short, and lands on the fleet',
    () =>
      journey(c, async () => {
        const { page } = c
        await page.goto(`${c.origin}/`, { timeout: WAIT })
        await heading(page, 'Sign in')
        await page.getByRole('link', { name: 'Create an account' }).click()
        await heading(page, 'Create your account')
        await expectAccessible(c, 'signup-1-email')

        const before = c.smtp.to(email).length
        await page.getByLabel('Email').fill(email)
        await page.getByLabel('Account name').fill('Rig Farm Ltd')
        await page.getByRole('button', { name: 'Email me a code' }).click()
        await page.getByLabel('Code').waitFor({ timeout: WAIT })
        expect(await page.getByRole('button', { name: /Send a new code \(in \d+ s\)/ }).isDisabled()).toBe(true)
        await expectAccessible(c, 'signup-2-code')

        // A wrong code first: the service's 401 is shown, the code can be typed again.
        await page.getByLabel('Code').fill('000000')
        await page.getByRole('button', { name: 'Check the code' }).click()
        await page.getByRole('alert').filter({ hasText: 'the code is wrong' }).waitFor({ timeout: WAIT })

        const code = await mailedCode(before)
        await page.getByLabel('Code').fill(code)
        await page.getByRole('button', { name: 'Check the code' }).click()
        // Twice in some forty loaded CI runs the field was empty when this click sent it (the page
        // sent code "" and showed the 422 at the field; the fill had no error). Not explained yet:
        // the field's refusal is shown, then the code is typed again once, and the log says so.
        const password = page.getByLabel('Password')
        const emptied = page.getByText('This is not in the expected form.')
        await password.or(emptied).first().waitFor({ timeout: WAIT })
        if (!(await password.isVisible())) {
          console.warn(`[journey] the Code field showed "${await page.getByLabel('Code').inputValue()}" after the code was filled in; typing it again`)
          await page.getByLabel('Code').fill(code)
          await page.getByRole('button', { name: 'Check the code' }).click()
        }
        await password.waitFor({ timeout: WAIT })

        await page.getByLabel('Password').fill('short')
        await page.getByRole('button', { name: 'Create the account' }).click()
        const fieldError = page.locator('.field.invalid .field-error')
        await fieldError.waitFor({ timeout: WAIT })
        expect(await fieldError.textContent()).toContain('too short')
        // The field says it is invalid and points at its message, and the focus went to it.
        const input = page.getByLabel('Password')
        expect(await input.getAttribute('aria-invalid')).toBe('true')
        expect(await input.getAttribute('aria-describedby')).toContain(await fieldError.getAttribute('id'))
        expect(await input.evaluate((el) => el === (el as unknown as { ownerDocument: { activeElement: unknown } }).ownerDocument.activeElement)).toBe(true)
        await expectAccessible(c, 'signup-3-refused')

        await input.fill(PASSWORD)
        await page.getByRole('button', { name: 'Create the account' }).click()
        await heading(page, 'Fleet')
        expect(page.url()).toBe(`${c.origin}/#/`)
        await expectAccessible(c, 'signup-4-signed-in')
      }),
    120_000,
  )

  test(
    'signs out, and a reload stays signed out',
    () =>
      journey(c, async () => {
        const { page } = c
        await page.getByRole('button', { name: 'Sign out' }).click()
        await heading(page, 'Sign in')
        await page.getByText('You signed out.').waitFor({ timeout: WAIT })
        await page.reload({ timeout: WAIT })
        await heading(page, 'Sign in')
      }),
    60_000,
  )

  test(
    'resets the password with the emailed code and is signed in; the old password no longer works',
    () =>
      journey(c, async () => {
        const { page } = c
        await page.getByRole('link', { name: 'Forgot your password?' }).click()
        await heading(page, 'Reset your password')
        const before = c.smtp.to(email).length
        await page.getByLabel('Email').fill(email)
        await page.getByRole('button', { name: 'Email me a code' }).click()
        await page.getByLabel('Code').fill(await mailedCode(before))
        await page.getByRole('button', { name: 'Check the code' }).click()
        await page.getByLabel('New password').fill(NEW_PASSWORD)
        await expectAccessible(c, 'reset-new-password')
        await page.getByRole('button', { name: 'Set the password and sign in' }).click()
        await heading(page, 'Fleet')

        await page.getByRole('button', { name: 'Sign out' }).click()
        await heading(page, 'Sign in')
        await page.getByLabel('Email').fill(email)
        await page.getByLabel('Password').fill(PASSWORD)
        await page.getByRole('button', { name: 'Sign in' }).click()
        await page.getByRole('alert').filter({ hasText: 'wrong email or password' }).waitFor({ timeout: WAIT })
        await page.getByLabel('Password').fill(NEW_PASSWORD)
        await page.getByRole('button', { name: 'Sign in' }).click()
        await heading(page, 'Fleet')
        await c.shot('signin-after-reset')
      }),
    120_000,
  )

  test('loaded nothing from outside the service, logged no error and broke no policy', () => {
    expectClean(c)
  })
})
