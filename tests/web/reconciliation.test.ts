import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { insertServer } from '../support/access'
import { startEarlyInUtcDay } from '../support/app'
import { expectAccessible, expectClean, journey, open, signedInOwner, startConsole, WAIT, type ConsoleSession } from '../support/browser'
import { api, ok, type Owner } from '../support/fleet'

/**
 * Issue 40 in the console: the "Payouts reconciled" page lists days × machines with the accrual, the
 * commission, what the platform paid and the unexplained gap, marks the day Vast paid short beyond
 * the threshold, and lets the owner change the threshold (the flag goes away at once).
 */

const KEY = 'vast-console-payouts-key-0123456789'
const OWNER_ID = 4545
const DAY_US = 86_400_000_000
let sim: MarketplaceASim
let c: ConsoleSession
let owner: Owner

const job = (name: string) => ok(c.app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' }))
const clock = (advance_seconds: number) => ok(c.app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds } }))

beforeAll(async () => {
  sim = await startMarketplaceA({ rateScale: 0, owners: [{ id: OWNER_ID, email: 'payouts@example.com', keys: [{ key: KEY, label: 'console' }] }] })
  c = await startConsole({ MARKETPLACE_A_API_URL: sim.url })
  await startEarlyInUtcDay(c.app)
  owner = await signedInOwner(c, 'pro')
  const server = await insertServer(c.app, owner.tenantId, 'rig-short')
  sim.putMachine(OWNER_ID, 851, { hostname: 'rig-851', listed: true, num_gpus: 2, gpu_name: 'RTX 4090', listed_gpu_cost: 0.5 })
  const rental = sim.addRental(851, { kind: 'on_demand', gpus: 2, running: true })
  await ok(await api(c.app, owner, 'PUT', '/billing/cost-basis', { json: { marketplaces: { marketplace_a: { commission_percent: '25' } } } }))
  await ok(await api(c.app, owner, 'PUT', '/reconciliation/settings', { json: { gap_threshold_usd: '0.50' } }))
  await ok(await api(c.app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY } }))
  await ok(
    await api(c.app, owner, 'POST', '/marketplaces/links', { json: { server_id: server, marketplace: 'marketplace_a', external_machine_id: '851' } }),
    201,
  )
  await job('marketplaces.sync')
  await job('earnings.sample')
  const dayNumber = Math.floor(c.app.deps.clock.nowUs() / DAY_US)
  // Two hours of two cards at 0.50: 2.00 accrued, 1.50 expected after 25 %; Vast reports 0.70.
  for (let h = 0; h < 2; h++) {
    await clock(3600 - 60)
    await job('marketplaces.sync')
    await clock(60)
    await job('earnings.sample')
  }
  sim.removeRental(rental)
  await job('marketplaces.sync')
  sim.addEarnings(OWNER_ID, [{ machine_id: 851, day: dayNumber, gpu_earn: 0.7, sto_earn: 0, bwu_earn: 0, bwd_earn: 0 }])
  await clock(((dayNumber + 1) * DAY_US - c.app.deps.clock.nowUs()) / 1_000_000 + 3600)
  await job('earnings.sample')
  await job('reconciliation.evaluate')
}, 120_000)
afterAll(async () => {
  await c?.close()
  await sim?.stop()
})

test('the page flags the day Vast paid short, and a higher threshold clears it', async () => {
  await journey(c, async () => {
    const { page } = c
    // Reached from the Earnings page.
    await open(c, '/earnings', 'Earnings')
    await page.getByRole('link', { name: 'Payouts reconciled' }).click()
    await page.getByRole('heading', { level: 1, name: 'Payouts reconciled' }).waitFor({ timeout: WAIT })
    const table = page.locator('section[aria-label="Reconciliation per day and machine"]')
    // Today's row (nothing accrued yet, not closed) comes first; yesterday's is flagged.
    const row = table.locator('tbody tr[data-flagged="true"]', { hasText: 'rig-short' })
    await row.waitFor({ timeout: WAIT })
    expect(await table.locator('tbody tr[data-flagged="true"]').count()).toBe(1)
    // Each figure under its own heading (a header row nested in another once put every cell of a
    // row after the last heading).
    const headings = await table.locator('thead > tr > th').allTextContents()
    const cells = await row.locator(':scope > td').allTextContents()
    expect(cells.length).toBe(headings.length)
    const under = (heading: string) => cells[headings.indexOf(heading)] ?? `no column ${heading}`
    expect(under('Machine')).toBe('rig-short')
    expect(under('Accrued')).toContain('$2.00')
    expect(under('Platform paid')).toContain('$0.70')
    expect(under('Expected')).toContain('$1.50') // after the 25 % commission
    expect(under('Unexplained gap')).toContain('−$0.80')
    expect(under('Status')).toContain('Flagged')
    await expectAccessible(c, 'reconciliation')

    await page.getByLabel('Flag a machine-day short by more than (USD)').fill('1.00')
    await page.getByRole('button', { name: 'Save the threshold' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor({ timeout: WAIT })
    await row.waitFor({ state: 'detached', timeout: WAIT })
    expect(await table.locator('tbody tr', { hasText: 'rig-short' }).count()).toBe(2)
    expectClean(c)
  })
}, 120_000)
