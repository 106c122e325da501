import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { markFleetDirty } from '../../src/modules/fleet'
import { insertServer } from '../support/access'
import { expectAccessible, expectClean, journey, open, signedInOwner, startConsole, WAIT, type ConsoleSession } from '../support/browser'
import { api, ok, type Owner } from '../support/fleet'

/**
 * Bulk changes in the console (docs/marketplaces.md "Bulk changes") against the marketplace_a
 * simulator: tick servers, choose a reprice, see each machine's price now and after, confirm, and
 * watch each machine's outcome, a refusal with the platform's words among them.
 */

const KEY = 'vast-console-bulk-key-0123456789'
let sim: MarketplaceASim
let c: ConsoleSession
let owner: Owner

beforeAll(async () => {
  sim = await startMarketplaceA({ rateScale: 0, owners: [{ id: 5353, email: 'bulk@example.com', keys: [{ key: KEY, label: 'console' }] }] })
  c = await startConsole({ MARKETPLACE_A_API_URL: sim.url })
  owner = await signedInOwner(c, 'pro')
  await ok(await api(c.app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY } }))
  for (let i = 0; i < 4; i++) {
    sim.putMachine(5353, 801 + i, { hostname: `bulk-${i}`, listed: true, listed_gpu_cost: 0.4, num_gpus: 1, gpu_name: 'RTX 4090' })
    const id = await insertServer(c.app, owner.tenantId, `bulk-${i}`)
    await ok(
      await api(c.app, owner, 'POST', '/marketplaces/links', { json: { server_id: id, marketplace: 'marketplace_a', external_machine_id: String(801 + i) } }),
      201,
    )
  }
  await markFleetDirty(c.app.deps.db, owner.tenantId)
  // The platform no longer counts machine 804 as the owner's: its reprice is refused.
  sim.removeMachine(804)
}, 120_000)
afterAll(async () => {
  await c?.close()
  await sim?.stop()
})

describe('bulk changes', () => {
  test("tick servers, preview each machine's new price, confirm, and watch each outcome", async () => {
    await journey(c, async () => {
      const { page } = c
      await open(c, '/marketplaces', 'Marketplaces')
      await page.getByRole('link', { name: 'Bulk changes' }).click()
      await page.getByRole('heading', { level: 1, name: 'Bulk changes' }).waitFor({ timeout: WAIT })
      await page.getByLabel('What to change').selectOption('reprice')
      await page.getByLabel('New price per GPU-hour (USD)').fill('0.55')
      for (let i = 0; i < 4; i++) await page.getByLabel(`bulk-${i}`, { exact: true }).check()
      await page.getByRole('button', { name: "Preview each machine's change" }).click()
      await page.getByText('4 of 4 machines change; 0 skipped. Nothing has been sent yet.').waitFor({ timeout: WAIT })
      const row = page.locator('.bulk-preview tr[data-server="bulk-0"]')
      expect(await row.textContent()).toContain('listed, $0.40/GPU-h')
      expect(await row.textContent()).toContain('listed, $0.55/GPU-h')
      expect(sim.requests().filter((r) => r.endpoint === 'create_asks')).toEqual([])
      await expectAccessible(c, 'bulk-1-preview')

      await page.getByRole('button', { name: 'Confirm: change 4 machines' }).click()
      await page.getByRole('heading', { level: 1, name: 'Bulk change' }).waitFor({ timeout: WAIT })
      await page.getByText('0 done, 0 refused, 0 skipped, 0 failed, 4 waiting').waitFor({ timeout: WAIT })
      // The bulk.run job sends them (the test clock runs it); the page reads the outcome again on its own.
      await ok(c.app.fetch('/api/v1/_test/jobs/bulk.run/run', { method: 'POST' }))
      await page.getByText('3 done, 1 refused, 0 skipped, 0 failed, 0 waiting').waitFor({ timeout: WAIT })
      const refused = page.locator('tr[data-server="bulk-3"]')
      expect(await refused.getAttribute('data-state')).toBe('refused')
      expect(await refused.textContent()).toContain('Only machine owner can create ask contracts')
      expect(await refused.textContent()).toContain('unchanged')
      expect(await page.locator('tr[data-server="bulk-0"]').getAttribute('data-state')).toBe('done')
      await expectAccessible(c, 'bulk-2-outcomes')

      await page.getByRole('link', { name: 'All bulk changes' }).click()
      await page.getByRole('heading', { level: 1, name: 'Bulk changes' }).waitFor({ timeout: WAIT })
      await page.getByText('3 done, 1 refused, 0 skipped').waitFor({ timeout: WAIT })
      expectClean(c)
    })
  }, 120_000)
})
