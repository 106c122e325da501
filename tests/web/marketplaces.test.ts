import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { api, enrolAgent, ok, type Owner } from '../support/fleet'
import { vastFullMachine } from '../support/marketplaces'
import { expectAccessible, expectClean, open, signedInOwner, startConsole, WAIT, type ConsoleSession } from '../support/browser'

/**
 * Marketplaces in the console (docs/marketplaces.md) against the local simulator of marketplace_a
 * (scripts/sim): a rejected key is named under its field, the right key connects, the server's
 * machine is found by its evidence and linked, its offer is published and withdrawn, a maintenance
 * window is announced; a marketplace_b offer is shown and published in its coin (against the
 * simulator of marketplace_b); earnings and the cost basis show their states.
 */

const KEY = 'vast-console-key-0123456789abcdef'
const KEY_B = 'clore-console-key-0123456789abcdef'
let sim: MarketplaceASim
let simB: MarketplaceBSim
let c: ConsoleSession
let owner: Owner
let serverId: string

beforeAll(async () => {
  sim = await startMarketplaceA({ rateScale: 0, owners: [{ id: 4242, email: 'host@example.com', keys: [{ key: KEY, label: 'console' }] }] })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    owners: {
      [KEY_B]: {
        label: 'console',
        userId: 9,
        servers: [{ name: 'rig-b', id: 55, online: true, visibility: 'hidden', specs: { gpu: '2x NVIDIA GeForce RTX 3090' } }],
      },
    },
  })
  c = await startConsole({ MARKETPLACE_A_API_URL: sim.url, MARKETPLACE_B_API_URL: simB.url })
  owner = await signedInOwner(c)
  // The machine of the server below, without maintenance windows of its own yet.
  const { machine_maintenance: _, ...machine } = vastFullMachine(Math.floor(Date.now() / 1000))
  sim.putMachine(4242, 501, machine)
  sim.putMachine(4242, 502, { hostname: 'other-box', gpu_name: 'RTX 3090', num_gpus: 1 })
  const gpus = Array.from({ length: 4 }, (_, i) => ({ index: i, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24564, uuid: `GPU-c-${i}` }))
  serverId = (await enrolAgent(c.app, owner, { hostname: 'rig-01', public_ip: '203.0.113.10', disk_gb: 6400, gpus })).server_id
}, 120_000)
afterAll(async () => {
  await c?.close()
  await sim?.stop()
  await simB?.stop()
})

describe('marketplaces', () => {
  test('a key the marketplace rejects is named under its field; the right one connects the account', async () => {
    const { page } = c
    await open(c, '/marketplaces', 'Marketplaces')
    await page.getByText('Connect a marketplace account first.').waitFor({ timeout: WAIT })
    await expectAccessible(c, 'marketplaces-1-empty')
    const card = page.locator('[data-marketplace="marketplace_a"]')
    await card.getByLabel('API key').fill('not-a-key-the-marketplace-knows')
    await card.getByRole('button', { name: 'Connect' }).click()
    const error = card.locator('.field.invalid .field-error')
    await error.waitFor({ timeout: WAIT })
    expect(await error.textContent()).toContain('rejected this key')
    await expectAccessible(c, 'marketplaces-2-rejected')

    await card.getByLabel('API key').fill(KEY)
    await card.getByRole('button', { name: 'Connect' }).click()
    await card.locator('.badge', { hasText: 'connected' }).waitFor({ timeout: WAIT })
    // The key is never shown again, not even in the field.
    expect(await card.getByLabel('API key').inputValue()).toBe('')
    expect(await page.content()).not.toContain(KEY)
  }, 120_000)

  test("the server's machine is found by its evidence and linked", async () => {
    const { page } = c
    await page.getByLabel('Server', { exact: true }).selectOption(serverId)
    await page.getByRole('button', { name: 'Find its machine' }).click()
    const candidate = page.locator('tr[data-machine="501"]')
    await candidate.getByText('suggested').waitFor({ timeout: WAIT })
    expect(await candidate.locator('td').filter({ hasText: '✓ matches' }).count()).toBeGreaterThanOrEqual(2)
    await expectAccessible(c, 'marketplaces-3-candidates')
    await candidate.getByRole('button', { name: 'Link machine 501' }).click()
    await page.locator('tr[data-link="marketplace_a:501"]').locator('.badge', { hasText: 'linked' }).waitFor({ timeout: WAIT })
  }, 120_000)

  test('the offer is published, a maintenance window announced, and the offer withdrawn', async () => {
    const { page } = c
    const row = page.locator('tr[data-link="marketplace_a:501"]')
    await row.locator('summary').click()
    await row.getByLabel('Price per GPU-hour (USD)').fill('0.45')
    await row.getByRole('button', { name: 'Publish the offer' }).click()
    await page.getByText('Offer published.').waitFor({ timeout: WAIT })
    await row.locator('td.num', { hasText: '$0.45' }).waitFor({ timeout: WAIT })
    await expectAccessible(c, 'marketplaces-4-offer')

    const tomorrow = new Date(Date.now() + 86_400_000)
    const local = new Date(tomorrow.getTime() - tomorrow.getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
    await row.getByLabel('Starts (your local time)').fill(local)
    await row.getByLabel('Hours').fill('5')
    await row.getByLabel('Category').selectOption('gpu')
    await row.getByRole('button', { name: 'Announce the window' }).click()
    await page.getByText('Maintenance window announced to the renters.').waitFor({ timeout: WAIT })
    await row.getByText(', 5 h').waitFor({ timeout: WAIT })

    await row.getByRole('button', { name: 'Withdraw the offer' }).click()
    await page.getByText('Offer withdrawn.').waitFor({ timeout: WAIT })
    const calls = sim.requests().map((r) => `${r.method} ${r.path}`)
    expect(calls.some((call) => call.startsWith('DELETE') && call.includes('/machines/501/asks'))).toBe(true)
    await page.locator('section', { hasText: 'Calls to the marketplaces' }).getByText('DELETE').first().waitFor({ timeout: WAIT })
    await expectAccessible(c, 'marketplaces-5-withdrawn')
  }, 120_000)

  test("a marketplace_b offer shows its coin's price and is published in that coin", async () => {
    const { page } = c
    // Set up over the API: the account, the same server linked to Clore's server 55 too, an offer.
    await ok(await api(c.app, owner, 'PUT', '/marketplaces/marketplace_b', { json: { api_key: KEY_B } }))
    await ok(
      await api(c.app, owner, 'POST', '/marketplaces/links', { json: { server_id: serverId, marketplace: 'marketplace_b', external_machine_id: '55' } }),
      201,
    )
    const offer = { coin_prices: { 'CLORE-Blockchain': { on_demand: '12.5' } } }
    await ok(await api(c.app, owner, 'PUT', `/marketplaces/links/${serverId}/marketplace_b/offer`, { json: offer }))

    // The page is still open from the tests above: loaded again, it reads the new link.
    await page.reload()
    await page.getByRole('heading', { level: 1, name: 'Marketplaces' }).waitFor({ timeout: WAIT })
    const row = page.locator('tr[data-link="marketplace_b:55"]')
    await row.locator('summary').click()
    // The form starts from the price the API sends for that coin (its on-demand price).
    const price = row.getByLabel('Price per day for the whole server')
    expect(await price.inputValue()).toBe('12.5')
    simB.clearRequests()
    await price.fill('20')
    await row.getByRole('button', { name: 'Publish the offer' }).click()
    await page.getByText('Offer published.').waitFor({ timeout: WAIT })
    const writes = simB.requests.filter((r) => r.method === 'POST' && r.path === '/v1/set_server_settings')
    expect(writes.map((w) => (w.body as Record<string, unknown>)['CLORE-Blockchain_on_demand'])).toEqual([20])
  }, 120_000)

  test('earnings and margin show their empty states, and the cost basis is saved with its pointers', async () => {
    const { page } = c
    await open(c, '/earnings', 'Earnings')
    await page.getByText('No earnings in this period.').waitFor({ timeout: WAIT })
    await page.getByLabel('Electricity (USD per kWh)').fill('0.145')
    await page.getByLabel('Marketplace A (Vast.ai) commission (%)').fill('0')
    await page.getByRole('button', { name: 'Save the cost basis' }).click()
    const error = page.locator('.field.invalid', { has: page.getByLabel('Marketplace A (Vast.ai) commission (%)') })
    await error.waitFor({ timeout: WAIT })
    await expectAccessible(c, 'earnings-1-refused')
    // Nothing entered for the operating costs yet: the margin says nothing of them.
    expect(await page.locator('[data-operational]').count()).toBe(0)
    await page.getByLabel('Marketplace A (Vast.ai) commission (%)').fill('25')
    await page.getByLabel('Other operating costs (USD per month)').fill('300')
    await page.getByRole('button', { name: 'Save the cost basis' }).click()
    await page.getByText('Saved.').waitFor({ timeout: WAIT })
    // The margin leaves them out, and says so beside it (docs/earnings.md "Margin").
    const leftOut = page.locator('[data-operational]')
    await leftOut.waitFor({ timeout: WAIT })
    expect(await leftOut.textContent()).toMatch(
      /^Other operating costs \(\$300\.00 a month(, \$[0-9.,]+ per server-day this month)?\) are not taken from this margin\.$/,
    )
    await page.getByLabel('Period').selectOption('30')
    await page.getByText('No earnings in this period.').waitFor({ timeout: WAIT })
    await expectAccessible(c, 'earnings-2-saved')
  }, 120_000)

  test('loaded nothing from outside the service, logged no error and broke no policy', () => {
    expectClean(c)
  })
})
