import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { expectAccessible, expectClean, startConsole, WAIT, type ConsoleSession } from '../support/browser'

/** The first visit: the sign-in page, what it loads, and the watchers every journey relies on. */

let c: ConsoleSession

beforeAll(async () => {
  c = await startConsole()
  await c.page.goto(`${c.origin}/`, { timeout: WAIT })
  await c.page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: WAIT })
}, 120_000)
afterAll(() => c?.close())

describe('the sign-in page', () => {
  test('is what a visitor without a session sees, accessible, in the light and the dark theme', async () => {
    expect(c.page.url()).toBe(`${c.origin}/#/signin`)
    await expect(c.page.getByLabel('Email')).toBeDefined()
    await expectAccessible(c, 'signin-light')
    await c.page.getByLabel('Theme').selectOption('dark')
    await c.page.waitForFunction(
      () => (globalThis as unknown as { document: { documentElement: { dataset: { theme?: string } } } }).document.documentElement.dataset.theme === 'dark',
      undefined,
      { timeout: WAIT },
    )
    await expectAccessible(c, 'signin-dark')
    await c.page.getByLabel('Theme').selectOption('system')
  }, 60_000)

  test('loaded the page, its files and the public configuration, all from the service itself', () => {
    const paths = c.requests.map((u) => new URL(u).pathname)
    expect(paths).toContain('/')
    expect(paths).toContain('/api/v1/auth/config')
    expect(paths.filter((p) => p.startsWith('/app/')).length).toBeGreaterThanOrEqual(2)
    expectClean(c)
  })

  test('a wrong password is refused with a message the screen reader hears, and no session', async () => {
    await c.page.getByLabel('Email').fill('nobody@example.test')
    await c.page.getByLabel('Password').fill('not the password at all')
    await c.page.getByRole('button', { name: 'Sign in' }).click()
    const alert = c.page.getByRole('alert')
    await alert.waitFor({ timeout: WAIT })
    expect(await alert.textContent()).toContain('wrong email or password')
    expect(c.page.url()).toBe(`${c.origin}/#/signin`)
    await expectAccessible(c, 'signin-refused')
  }, 60_000)
})

describe('the watchers (so that a journey can fail)', () => {
  test('a page that goes to another origin is caught, and so is a fetch the policy stopped', async () => {
    const before = c.requests.length
    // Navigation is not governed by the policy: the request watcher sees it.
    const other = await c.context.newPage()
    await other.goto('http://elsewhere.invalid/x', { timeout: WAIT }).catch(() => null)
    await other.close()
    expect(c.outside()).toEqual(['http://elsewhere.invalid/x'])
    c.requests.splice(before)
    expect(c.outside()).toEqual([])
    // A fetch elsewhere never leaves the page (connect-src 'self'), and the violation is recorded.
    await c.page.evaluate(() => fetch('http://elsewhere.invalid/y').catch(() => null))
    await c.page.waitForFunction(() => (globalThis as unknown as { __csp: string[] }).__csp.length > 0, undefined, { timeout: WAIT })
    const found = await c.page.evaluate(() => (globalThis as unknown as { __csp: string[] }).__csp.splice(0))
    expect(found).toEqual(['connect-src http://elsewhere.invalid/y'])
  }, 60_000)

  test('the policy blocks an inline script, and the violation is reported', async () => {
    const blocked = await c.page.evaluate(() => {
      const d = (globalThis as unknown as { document: any }).document
      const s = d.createElement('script')
      s.textContent = 'window.__ran = true'
      d.body.appendChild(s)
      return !(globalThis as unknown as { __ran?: boolean }).__ran
    })
    expect(blocked).toBe(true)
    await c.page.waitForFunction(() => (globalThis as unknown as { __csp: string[] }).__csp.length > 0, undefined, { timeout: WAIT })
    const found = await c.page.evaluate(() => (globalThis as unknown as { __csp: string[] }).__csp.splice(0))
    expect(found.join()).toContain('script-src')
  })
})
