import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { insertServer } from '../support/access'
import { expectAccessible, expectClean, journey, open, signedInOwner, startConsole, WAIT, type ConsoleSession } from '../support/browser'
import { api, ok, type Owner } from '../support/fleet'

/**
 * Issue 40 in the console: the server page's "Drain for maintenance" takes a rented server's offer
 * off the Vast simulator and shows the drain waiting for the rental's end; the fleet page shows the
 * drain's state on the row; cancelling it from the server page puts the offer back.
 */

const KEY = 'vast-console-drain-key-0123456789'
let sim: MarketplaceASim
let c: ConsoleSession
let owner: Owner
let serverId: string

beforeAll(async () => {
  sim = await startMarketplaceA({ rateScale: 0, owners: [{ id: 4545, email: 'host@example.com', keys: [{ key: KEY, label: 'console' }] }] })
  c = await startConsole({ MARKETPLACE_A_API_URL: sim.url })
  owner = await signedInOwner(c, 'pro')
  serverId = await insertServer(c.app, owner.tenantId, 'rig-drain')
  sim.putMachine(4545, 811, { hostname: 'rig-811', listed: false, num_gpus: 2, gpu_name: 'RTX 4090' })
  await ok(await api(c.app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY } }))
  await ok(
    await api(c.app, owner, 'POST', '/marketplaces/links', { json: { server_id: serverId, marketplace: 'marketplace_a', external_machine_id: '811' } }),
    201,
  )
  await ok(await api(c.app, owner, 'PUT', `/marketplaces/links/${serverId}/marketplace_a/offer`, { json: { price_gpu_hour: '0.45' } }))
  sim.addRental(811, { kind: 'on_demand', gpus: 2, running: true })
  await ok(c.app.fetch('/api/v1/_test/jobs/marketplaces.sync/run', { method: 'POST' }))
}, 120_000)
afterAll(async () => {
  await c?.close()
  await sim?.stop()
})

/** How many times Vast was asked to list the machine. */
const asks = () => sim.requests().filter((r) => r.method === 'PUT' && r.endpoint === 'create_asks').length

test(
  'a drain started on the server page waits for the rental, shows on the fleet, and its cancel restores the listing',
  () =>
    journey(c, async () => {
      const { page } = c
      await open(c, `/servers/${serverId}`, 'rig-drain')
      const section = page.locator('#drain')
      await section.getByLabel('What for (optional)').fill('driver update')
      await section.getByLabel('Then run').selectOption('docker.restart')
      await section.getByRole('button', { name: 'Drain for maintenance' }).click()
      await section.locator('[data-drain-state="awaiting_rental_end"]').waitFor({ timeout: WAIT })
      expect(await section.textContent()).toContain('Waiting for the running rentals to end')
      expect(await section.textContent()).toContain('offer withdrawn')
      expect(sim.requests().filter((r) => r.method === 'DELETE' && r.endpoint === 'unlist')).toHaveLength(1)
      await expectAccessible(c, 'server-drain')

      await page.getByRole('link', { name: 'Back to the fleet' }).click()
      await page.locator(`tr[data-server="${serverId}"] [data-drain-state="awaiting_rental_end"]`).waitFor({ timeout: WAIT })

      await open(c, `/servers/${serverId}`, 'rig-drain')
      const before = asks()
      await page.locator('#drain').getByRole('button', { name: 'Cancel the drain' }).click()
      await page.locator('#drain [data-drain-state="cancelled"]').waitFor({ timeout: WAIT })
      expect(asks()).toBe(before + 1)
      // Finished: the form is offered again.
      await page.locator('#drain').getByRole('button', { name: 'Drain for maintenance' }).waitFor({ timeout: WAIT })
      expectClean(c)
    }),
  120_000,
)
