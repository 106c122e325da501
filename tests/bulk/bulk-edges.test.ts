import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { insertServer } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { api, newOwner, ok, setAccountState, type Owner } from '../support/fleet'

/**
 * Bulk changes beyond the reprice of tests/bulk/bulk.test.ts: marketplace_b's per-coin prices, a
 * group as the selection, a platform that cannot be reached (the item waits, then goes), an item a
 * stopped process left `sending` (sent again), and the frozen account (publish refused, withdraw not).
 */

const KEY_A = 'vast-bulk-edges-key-0123456789ab'
const KEY_B = 'clore-bulk-edges-key-0123456789'
let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Owner
let a1: string
let a2: string
let b1: string

const runJob = () => ok(app.fetch('/api/v1/_test/jobs/bulk.run/run', { method: 'POST' }))
const start = async (json: unknown) => ok(await api(app, owner, 'POST', '/bulk-operations', { json }), 202)
const read = async (id: string) => ok(await api(app, owner, 'GET', `/bulk-operations/${id}`))

beforeAll(async () => {
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: 8101, email: 'edges@example.com', keys: [{ key: KEY_A, label: 'edges' }] }] })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    owners: {
      [KEY_B]: {
        label: 'edges',
        userId: 9,
        servers: [{ name: 'rig-b', id: 55, online: true, visibility: 'hidden', specs: { gpu: '2x NVIDIA GeForce RTX 3090' } }],
      },
    },
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url })
  owner = await newOwner(app, 'bulk-edges', 'pro')
  simA.putMachine(8101, 901, { hostname: 'edge-1', listed: true, listed_gpu_cost: 0.3, num_gpus: 1 })
  simA.putMachine(8101, 902, { hostname: 'edge-2', listed: true, listed_gpu_cost: 0.3, num_gpus: 1 })
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY_A } }))
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_b', { json: { api_key: KEY_B } }))
  const made: string[] = []
  for (const n of ['edge-1', 'edge-2', 'rig-b']) made.push(await insertServer(app, owner.tenantId, n))
  ;[a1, a2, b1] = made as [string, string, string]
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: a1, marketplace: 'marketplace_a', external_machine_id: '901' } }), 201)
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: a2, marketplace: 'marketplace_a', external_machine_id: '902' } }), 201)
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: b1, marketplace: 'marketplace_b', external_machine_id: '55' } }), 201)
})
afterAll(async () => {
  await app.close()
  await simA.stop()
  await simB.stop()
})

describe('bulk changes, the edges', () => {
  test('marketplace_b: a group published at a per-coin, per-day price reaches Clore as set_server_settings', async () => {
    const group = await ok(await api(app, owner, 'POST', '/groups', { json: { name: 'clore rigs' } }), 201)
    await ok(await api(app, owner, 'PATCH', `/servers/${b1}`, { json: { group_id: group.id } }))
    const op = await start({ marketplace: 'marketplace_b', action: 'publish', group_id: group.id, coin_prices: { 'CLORE-Blockchain': { on_demand: '2000' } } })
    expect(op.items.map((i: any) => [i.server_id, i.state, i.after?.coin_prices?.['CLORE-Blockchain']?.on_demand])).toEqual([[b1, 'pending', '2000']])
    simB.clearRequests()
    await runJob()
    expect((await read(op.id)).counts).toMatchObject({ total: 1, done: 1 })
    const writes = simB.requests.filter((r) => r.method === 'POST' && r.path === '/v1/set_server_settings')
    expect(writes.map((w) => (w.body as Record<string, unknown>)['CLORE-Blockchain_on_demand'])).toEqual([2000])
  })

  test('an unreachable platform leaves the item waiting with the reason; the next run sends it', async () => {
    const op = await start({ marketplace: 'marketplace_a', action: 'reprice', server_ids: [a1, a2], price_gpu_hour: '0.35' })
    await simA.setMode('unreachable')
    await runJob()
    const waiting = await read(op.id)
    expect(waiting.state).toBe('running')
    expect(waiting.counts).toMatchObject({ pending: 2, done: 0 })
    expect(waiting.items[0]).toMatchObject({ state: 'pending', attempts: 1 })
    expect(waiting.items[0].reason).toBe('marketplace_a could not be reached (ECONNREFUSED)')
    // The operation stopped at the first item rather than knocking again for the second.
    expect(waiting.items[1]).toMatchObject({ state: 'pending', attempts: 0, reason: null })
    await simA.setMode('ok')
    await runJob()
    const done = await read(op.id)
    expect(done.state).toBe('finished')
    expect(done.items.map((i: any) => [i.state, i.attempts])).toEqual([
      ['done', 2],
      ['done', 1],
    ])
  })

  test('an item a stopped process left sending is sent again; decided items are not', async () => {
    const op = await start({ marketplace: 'marketplace_a', action: 'reprice', server_ids: [a1, a2], price_gpu_hour: '0.36' })
    // As a process that died during the first item's call leaves it.
    await app.deps.db.run(sql`UPDATE bulk_items SET state = 'sending', attempts = 1 WHERE operation_id = ${op.id} AND position = 0`)
    simA.clearRequests()
    await runJob()
    const done = await read(op.id)
    expect(done.items.map((i: any) => [i.state, i.attempts])).toEqual([
      ['done', 2],
      ['done', 1],
    ])
    expect(
      simA
        .requests()
        .filter((r) => r.endpoint === 'create_asks')
        .map((r) => (r.body as { machine: number }).machine),
    ).toEqual([901, 902])
    simA.clearRequests()
    await runJob()
    expect(simA.requests().filter((r) => r.endpoint === 'create_asks')).toEqual([])
  })

  test('a frozen account may withdraw in bulk but not publish or reprice', async () => {
    await setAccountState(app, owner.tenantId, 'frozen')
    const refused = await api(app, owner, 'POST', '/bulk-operations', {
      json: { marketplace: 'marketplace_a', action: 'reprice', server_ids: [a1], price_gpu_hour: '0.5' },
    })
    expect(refused.status).toBe(403)
    expect(((await refused.json()) as { code: string }).code).toBe('account_frozen')
    const op = await start({ marketplace: 'marketplace_a', action: 'withdraw', server_ids: [a1] })
    await runJob()
    expect((await read(op.id)).counts).toMatchObject({ done: 1 })
    expect(simA.billing(901)).not.toBeNull()
    await setAccountState(app, owner.tenantId, 'active')
  })
})
