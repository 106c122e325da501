import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { startTestApp, type TestApp } from '../support/app'
import { api, enrolAgent, newOwner, ok, type Facts, type Owner } from '../support/fleet'

/**
 * Issue 39, readiness on marketplace_b (docs/readiness.md "Why each marketplace differs"): the
 * Clore simulator's server fields (`cuda_version`, `reliability`, `specs.gpuram`, `specs.ram`,
 * `specs.cpus`, `specs.net`) reach the check list through the sync's projection; Clore verifies
 * nothing, so its list has no verification items, and PCIe bandwidth, which it does not measure, is
 * not required there. 2 × 24 GiB of VRAM puts the bandwidth floor at 500 × 48 ÷ 192 = 125 Mb/s.
 */

const KEY = 'clore-readiness-key-7d1c0e5a22'

const SERVER = {
  name: 'rig-b',
  id: 77,
  connected: true,
  online: true,
  visibility: 'public' as const,
  pricing: { 'USD-Blockchain': 20 },
  reliability: 0.99,
  cuda_version: '12.4',
  specs: { gpu: '2x NVIDIA GeForce RTX 4090', gpuram: 24, ram: 64, cpus: '8/16', pcie_width: 16, net: { up: 300, down: 900, cc: 'NL' } },
  rentals: [],
}

type Item = { id: string; status: string; value: string | null; required: boolean; value_source: string | null }
type Entry = { marketplace: string; linked: boolean; status: string; items: Item[] }

let sim: MarketplaceBSim
let app: TestApp
let owner: Owner
let serverId: string

const job = (name: string) => ok(app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' }))
async function entry(): Promise<Entry> {
  const r = await ok<{ marketplaces: Entry[] }>(await api(app, owner, 'GET', `/servers/${serverId}/readiness`))
  return r.marketplaces.find((m) => m.marketplace === 'marketplace_b')!
}

beforeAll(async () => {
  sim = await startMarketplaceB({
    requestIntervalMs: 0,
    currencyRatesInUsd: { 'USD-Blockchain': 1 },
    owners: { [KEY]: { label: 'ready-b', userId: 8, servers: [SERVER] } },
  })
  app = await startTestApp({ MARKETPLACE_B_API_URL: sim.url })
  owner = await newOwner(app, 'ready-b', 'pro')
  const gpus = [0, 1].map((index) => ({ index, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24576 }))
  serverId = (await enrolAgent(app, owner, { gpus, port_range: '40000-40099' } as Partial<Facts>)).server_id
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_b', { json: { api_key: KEY } }))
  await ok(
    await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: serverId, marketplace: 'marketplace_b', external_machine_id: '77' } }),
    201,
  )
})
afterAll(async () => {
  await app.close()
  await sim.stop()
})

describe('readiness on marketplace_b', () => {
  test('a Clore server meeting every bar Clore can be held to is ready; its list has no verification items', async () => {
    const e = await entry()
    expect(e).toMatchObject({ linked: true, status: 'ready' })
    const byId = Object.fromEntries(e.items.map((i) => [i.id, i]))
    expect(Object.keys(byId)).not.toContain('verification')
    expect(Object.keys(byId)).not.toContain('driver.unchanged')
    expect(byId['cuda.version']).toMatchObject({ status: 'pass', value: '12.4', value_source: 'marketplace' })
    expect(byId.reliability).toMatchObject({ status: 'pass', value: '0.99' })
    expect(byId['cpu.cores']).toMatchObject({ status: 'pass', value: '16', value_source: 'marketplace' })
    expect(byId['system.ram']).toMatchObject({ status: 'pass', value: '65536' })
    expect(byId['gpu.ram']).toMatchObject({ status: 'pass', value: '24576' })
    expect(byId['pcie.bandwidth']).toMatchObject({ status: 'unknown', required: false })
    // Clore shows no direct ports: the agent's port range stands in.
    expect(byId['network.direct_ports']).toMatchObject({ status: 'pass', value: '100', value_source: 'agent', required: false })
  })

  test.each([
    ['upload at the floor, 125', { up: 125, down: 900 }, 'network.upload', 'pass'],
    ['upload just below, 124.9', { up: 124.9, down: 900 }, 'network.upload', 'fail'],
    ['download just above, 125.1', { up: 300, down: 125.1 }, 'network.download', 'pass'],
    ['download just below, 124.9', { up: 300, down: 124.9 }, 'network.download', 'fail'],
  ])('%s flips only its item', async (_what, net, itemId, status) => {
    sim.updateServer(KEY, 'rig-b', { specs: { ...SERVER.specs, net: { ...net, cc: 'NL' } } })
    await job('marketplaces.sync')
    const e = await entry()
    expect(e.items.find((i) => i.id === itemId)!.status).toBe(status)
    expect(e.items.filter((i) => i.status === 'fail').map((i) => i.id)).toEqual(status === 'fail' ? [itemId] : [])
  })
})
