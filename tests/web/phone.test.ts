import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { expectAccessible, expectClean, open, signedInOwner, startConsole, WAIT, type ConsoleSession } from '../support/browser'

/**
 * The console on a phone-sized screen (390 × 844), in the dark theme the phone asks for: the
 * navigation folds behind a Menu button, nothing is wider than the screen, every page stays
 * accessible. Also the pages a free plan does not include, which say so instead of failing.
 */

let c: ConsoleSession
declare const document: { documentElement: { scrollWidth: number; clientWidth: number } }

beforeAll(async () => {
  c = await startConsole({}, { width: 390, height: 844 })
  await c.page.emulateMedia({ colorScheme: 'dark' })
  await signedInOwner(c)
}, 120_000)
afterAll(() => c?.close())

const fitsTheScreen = () => c.page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)

describe('on a phone', () => {
  test('the navigation opens from the Menu button and leads to every page, none wider than the screen', async () => {
    const { page } = c
    const nav = page.getByRole('navigation', { name: 'Main' })
    expect(await nav.isVisible()).toBe(false)
    expect(await fitsTheScreen()).toBe(true)
    await expectAccessible(c, 'phone-1-fleet')
    for (const [link, title] of [
      ['Billing', 'Billing'],
      ['Marketplaces', 'Marketplaces'],
      ['Commands', 'Commands'],
      ['Earnings', 'Earnings'],
      ['Alerts', 'Alerts'],
      ['Reports', 'Reports'],
      ['Settings', 'Settings'],
    ]) {
      await page.getByRole('button', { name: 'Menu' }).click()
      await nav.waitFor({ timeout: WAIT })
      await nav.getByRole('link', { name: link }).click()
      await page.getByRole('heading', { level: 1, name: title }).waitFor({ timeout: WAIT })
      await page.locator('.state.loading').first().waitFor({ state: 'detached', timeout: WAIT })
      expect(await nav.isVisible()).toBe(false)
      expect({ title, fits: await fitsTheScreen() }).toEqual({ title, fits: true })
      await expectAccessible(c, `phone-2-${title.toLowerCase()}`)
    }
  }, 180_000)

  test('notifications, tokens and the plan, reached from Settings, fit the screen too', async () => {
    const { page } = c
    for (const [link, title] of [
      ['Notifications', 'Notifications'],
      ['Tokens', 'Tokens'],
      ['Plan', 'Plan'],
    ]) {
      await open(c, '/settings', 'Settings')
      await page.getByRole('main').getByRole('link', { name: link, exact: true }).click()
      await page.getByRole('heading', { level: 1, name: title }).waitFor({ timeout: WAIT })
      await page.locator('.state.loading').first().waitFor({ state: 'detached', timeout: WAIT })
      expect({ title, fits: await fitsTheScreen() }).toEqual({ title, fits: true })
      await expectAccessible(c, `phone-2-${title.toLowerCase()}`)
    }
  }, 120_000)

  test('strategy and AI access say the free plan lacks them and point at the plans', async () => {
    const { page } = c
    for (const [route, title] of [
      ['/strategy', 'Strategy'],
      ['/ai', 'AI access'],
    ]) {
      await open(c, route, title)
      await page.getByRole('heading', { name: 'Not on your plan' }).waitFor({ timeout: WAIT })
      await page.getByRole('link', { name: 'See the plans' }).waitFor({ timeout: WAIT })
      await expectAccessible(c, `phone-3-${route.slice(1)}-not-on-plan`)
    }
  }, 120_000)

  test('an unknown address says so', async () => {
    await open(c, '/nowhere', 'Not found')
    await expectAccessible(c, 'phone-4-not-found')
  }, 60_000)

  test('loaded nothing from outside the service, logged no error and broke no policy', () => {
    expectClean(c)
  })
})
