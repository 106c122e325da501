import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { readdirSync } from 'node:fs'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { insertServers } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { onPostgres, storedText } from '../support/postgres'
import { commandFrame, framesAbout, issue, onlineServer, rows } from '../support/commands'
import { api, closeAllAgents, newOwner, ok, type Owner, type RawAgent } from '../support/fleet'
import { cloreFullServer, vastFullMachine } from '../support/marketplaces'

/**
 * Issue 16, the marketplaces.sync job, run through POST /_test/jobs/marketplaces.sync/run against
 * both simulators over real HTTP: projections refreshed, vanished machines stale and back, conflicts
 * kept, the three failure outcomes recorded on the connection (only a rejection marks the key
 * invalid, and an invalid key is not sent again), a rental a marketplace reports holding a dangerous
 * command with a queue_reason until it ends, the calls paced per key as the simulators' request logs
 * saw them, and the keys in no answer, log line, database file or WAL.
 */

const KEY_A = 'vast-sync-key-0123456789abcdef'
const KEY_B = 'clore-sync-key-5f2e9a17c3'
const RENTER_B = 'clore-sync-renter-0b8d44e6a1'
const KEYS = [KEY_A, KEY_B, RENTER_B]
const VAST_OWNER = 4242

type Link = { server_id: string; marketplace: string; external_machine_id: string; state: string; last_seen_at: string | null; remote: Record<string, any> }
type Connection = { marketplace: string; status: string; last_success_at: string | null; last_failure_at: string | null; last_failure: string | null }

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Owner
let s1: string
let s2: string
let s3: string
let s4: string
const seen: string[] = []

beforeAll(async () => {
  // The simulators enforce a small minimum interval; the service paces at 20 % of the published
  // limits (marketplace_a 1.1 s → 220 ms per endpoint, marketplace_b 1.8 s → 360 ms per key), so a
  // refused call would mean the pacing failed, with a wide margin for a loaded machine.
  simA = await startMarketplaceA({ rateScale: 0.05, owners: [{ id: VAST_OWNER, email: 'host@example.com', keys: [{ key: KEY_A, label: 'sync' }] }] })
  simB = await startMarketplaceB({
    requestIntervalMs: 60,
    currencyRatesInUsd: { bitcoin: 60000, 'CLORE-Blockchain': 0.0025, 'USD-Blockchain': 1 },
    owners: { [KEY_B]: { label: 'alice', userId: 7, servers: [cloreFullServer(KEY_B, RENTER_B)] } },
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url, MARKETPLACE_PACE_PERCENT: '20' })
  owner = await newOwner(app, 'sync', 'pro')
  ;[s1, s2, s3, s4] = (await insertServers(app, owner.tenantId, ['rig-1', 'rig-2', 'rig-3', 'rig-4'])) as [string, string, string, string]
  const nowS = Math.floor(app.deps.clock.nowUs() / 1_000_000)
  simA.putMachine(VAST_OWNER, 601, vastFullMachine(nowS))
  simA.putMachine(VAST_OWNER, 602, { hostname: 'rig-602', listed: false })
  simA.putMachine(VAST_OWNER, 603, { hostname: 'rig-603' })
  await ok(api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY_A } }))
  await ok(api(app, owner, 'PUT', '/marketplaces/marketplace_b', { json: { api_key: KEY_B } }))
  await ok(link(s1, 'marketplace_a', '601'), 201)
  await ok(link(s2, 'marketplace_a', '602'), 201)
  await ok(link(s3, 'marketplace_b', '41'), 201)
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
  await simA.stop()
  await simB.stop()
})

async function read<T>(res: Promise<Response>, status = 200): Promise<T> {
  const r = await res
  const text = await r.text()
  seen.push(text)
  expect({ status: r.status, text }).toMatchObject({ status })
  return JSON.parse(text) as T
}
const link = (server_id: string, marketplace: string, external_machine_id: string) =>
  api(app, owner, 'POST', '/marketplaces/links', { json: { server_id, marketplace, external_machine_id } })
const links = async () => (await read<{ links: Link[] }>(api(app, owner, 'GET', '/marketplaces/links'))).links
const linkOf = async (server: string, marketplace = 'marketplace_a') => (await links()).find((l) => l.server_id === server && l.marketplace === marketplace)!
const connection = async (marketplace: string) =>
  (await read<{ items: Connection[] }>(api(app, owner, 'GET', '/marketplaces/accounts'))).items.find((c) => c.marketplace === marketplace)!
const advance = (seconds: number) => ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
async function sync(): Promise<string> {
  const run = await read<{ outcome: string; detail: string }>(app.fetch('/api/v1/_test/jobs/marketplaces.sync/run', { method: 'POST' }))
  expect(run.outcome).toBe('succeeded')
  return run.detail
}

describe('refreshing links', () => {
  test('each link takes the projection the platform shows now, with last_seen_at at the sync', async () => {
    const before = await linkOf(s1)
    simA.updateMachine(601, { listed_gpu_cost: 0.55, current_rentals_running: 0, reliability2: 0.5 })
    await advance(60)
    expect(await sync()).toContain('3 refreshed')
    const after = await linkOf(s1)
    expect(after.state).toBe('linked')
    expect(after.remote).toEqual({ ...before.remote, price_gpu_hour: '0.55', rentals_running: 0, reliability: 0.5 })
    expect(Date.parse(after.last_seen_at!)).toBeGreaterThanOrEqual(Date.parse(before.last_seen_at!) + 60_000)
    const b = await linkOf(s3, 'marketplace_b')
    expect(b.state).toBe('linked')
    expect(Date.parse(b.last_seen_at!)).toBeGreaterThanOrEqual(Date.parse(before.last_seen_at!) + 60_000)
    const conn = await connection('marketplace_a')
    expect(conn).toMatchObject({ status: 'connected', last_failure: null, last_failure_at: null })
    expect(conn.last_success_at).not.toBeNull()
  })

  test('the sync is logged as the system in the operations log, fleet-wide', async () => {
    const page = await read<{ items: { operation: string; actor: { kind: string; id: string | null }; server_id: string | null }[] }>(
      api(app, owner, 'GET', '/marketplaces/operations?limit=100'),
    )
    const bySystem = page.items.filter((o) => o.actor.kind === 'system')
    expect(bySystem.map((o) => o.operation)).toContain('machines.list')
    expect(bySystem.map((o) => o.operation)).toContain('servers.list')
    // The account reads concern no one server; the per-machine renter-report reads are logged under their server.
    const accountReads = bySystem.filter((o) => o.operation !== 'machine.reports')
    expect(accountReads.every((o) => o.actor.id === null && o.server_id === null)).toBe(true)
    expect(bySystem.filter((o) => o.operation === 'machine.reports').every((o) => o.actor.id === null && o.server_id !== null)).toBe(true)
  })
})

describe('stale and conflict', () => {
  test('a machine that stops appearing makes its link stale, kept with its last projection; it is linked again when it comes back', async () => {
    const before = await linkOf(s2)
    simA.removeMachine(602)
    await advance(60)
    expect(await sync()).toContain('1 stale')
    const stale = await linkOf(s2)
    expect(stale).toEqual({ ...before, state: 'stale' })
    simA.putMachine(VAST_OWNER, 602, { hostname: 'rig-602', listed: true })
    await sync()
    const back = await linkOf(s2)
    expect(back.state).toBe('linked')
    expect(back.remote.listed).toBe(true)
    expect(Date.parse(back.last_seen_at!)).toBeGreaterThan(Date.parse(before.last_seen_at!))
  })

  test('one machine claimed by two servers is a conflict on both, kept by the sync until one claim goes', async () => {
    await ok(link(s4, 'marketplace_a', '601'), 201)
    simA.updateMachine(601, { hostname: 'rig-01-renamed' })
    await sync()
    for (const s of [s1, s4]) {
      const l = await linkOf(s)
      expect(l.state).toBe('conflict')
      expect(l.remote.hostname).toBe('rig-01-renamed')
    }
    expect((await api(app, owner, 'DELETE', `/marketplaces/links/${s4}/marketplace_a`)).status).toBe(204)
    expect((await linkOf(s1)).state).toBe('linked')
    await sync()
    expect((await linkOf(s1)).state).toBe('linked')
  })

  test('a conflict whose machine vanished is stale, and a conflict again when it returns', async () => {
    await ok(link(s4, 'marketplace_a', '603'), 201)
    await ok(link(s2, 'marketplace_b', '41'), 201) // rig-2 also claims Clore's 41, held by rig-3
    simA.removeMachine(603)
    await sync()
    expect((await linkOf(s4)).state).toBe('stale')
    expect((await linkOf(s2, 'marketplace_b')).state).toBe('conflict')
    expect((await linkOf(s3, 'marketplace_b')).state).toBe('conflict')
    simA.putMachine(VAST_OWNER, 603, { hostname: 'rig-603' })
    await sync()
    expect((await linkOf(s4)).state).toBe('linked')
    expect((await api(app, owner, 'DELETE', `/marketplaces/links/${s2}/marketplace_b`)).status).toBe(204)
    expect((await linkOf(s3, 'marketplace_b')).state).toBe('linked')
  })
})

describe('pacing', () => {
  test("a sync's calls to one key are spaced as the platforms publish, so neither simulator refuses one", async () => {
    simA.clearRequests()
    simB.clearRequests()
    await sync()
    await sync() // marketplace_a's one list call per sync: the second waits for the first's interval
    const all = simA.requests().filter((r) => r.identity === 'sync')
    expect(all.every((r) => r.status === 200)).toBe(true)
    const a = all.filter((r) => r.endpoint === 'machines')
    expect(a).toHaveLength(2)
    expect(a[1]!.time - a[0]!.time).toBeGreaterThanOrEqual(50)
    // Each linked machine's renter reports after the list, one call each, spaced by their own interval (reports 1.2 s).
    const reports = all.filter((r) => r.endpoint === 'reports')
    expect(reports.length).toBeGreaterThanOrEqual(2)
    for (let i = 1; i < reports.length; i++) expect(reports[i]!.time - reports[i - 1]!.time).toBeGreaterThanOrEqual(60)
    const b = simB.requests.filter((r) => r.key === 'alice')
    expect(b.length).toBeGreaterThanOrEqual(8)
    expect(b.every((r) => r.code === 0)).toBe(true)
    for (let i = 1; i < b.length; i++) expect(b[i]!.at - b[i - 1]!.at).toBeGreaterThanOrEqual(60)
  })
})

describe('rentals a marketplace reports', () => {
  let server: string
  let agent: RawAgent
  let rental: number
  let reboot: string

  test('a rental on the linked machine makes the server rented, with the marketplace as its source', async () => {
    ;({ server_id: server, agent } = await onlineServer(app, owner))
    simA.putMachine(VAST_OWNER, 604, { hostname: 'rig-604' })
    await ok(link(server, 'marketplace_a', '604'), 201)
    expect(await read<{ rental_active: boolean }>(api(app, owner, 'GET', `/servers/${server}`))).toMatchObject({ rental_active: false, rental_sources: [] })
    rental = simA.addRental(604, { kind: 'on_demand', gpus: 1, running: true })
    await sync()
    expect(await read<{ rental_active: boolean }>(api(app, owner, 'GET', `/servers/${server}`))).toMatchObject({
      rental_active: true,
      rental_sources: ['marketplace_a'],
    })
    expect((await rows(app, sql`SELECT kind FROM server_events WHERE server_id = ${server} AND kind LIKE ${'marketplace.%'}`)).map((r) => r.kind)).toEqual([
      'marketplace.rental_started',
    ])
  })

  test('a dangerous command waits with queue_reason awaiting_rental_end, even after the operator clears their own rental fact', async () => {
    const c = await issue(app, owner, server, 'reboot')
    expect(c).toMatchObject({ requires: 'after_rental', delivery_status: 'queued', queue_reason: 'awaiting_rental_end' })
    reboot = c.command_id
    await ok(api(app, owner, 'PATCH', `/servers/${server}`, { json: { rental_active: false } }))
    await agent.barrier()
    expect(framesAbout(agent, 'command', reboot)).toEqual([])
    expect(await read<Record<string, unknown>>(api(app, owner, 'GET', `/commands/${reboot}`))).toMatchObject({
      delivery_status: 'queued',
      queue_reason: 'awaiting_rental_end',
    })
  })

  test('a failed sync keeps the rental it last saw', async () => {
    await simA.setMode('5xx')
    await sync()
    await simA.setMode('ok')
    expect(await read<{ rental_active: boolean }>(api(app, owner, 'GET', `/servers/${server}`))).toMatchObject({ rental_active: true })
  })

  test('when the marketplace reports the rental over, the command goes to the agent', async () => {
    simA.removeRental(rental)
    await sync()
    const frame = await commandFrame(agent, reboot)
    expect(frame.command_type).toBe('reboot')
    expect(await read<Record<string, unknown>>(api(app, owner, 'GET', `/servers/${server}`))).toMatchObject({ rental_active: false, rental_sources: [] })
    expect((await rows(app, sql`SELECT kind FROM server_events WHERE server_id = ${server} AND kind LIKE ${'marketplace.%'}`)).map((r) => r.kind)).toEqual([
      'marketplace.rental_started',
      'marketplace.rental_ended',
    ])
  })

  test('unlinking a rented machine ends what it reported', async () => {
    rental = simA.addRental(604, { kind: 'interruptible', gpus: 1, running: true })
    await sync()
    expect(await read<Record<string, unknown>>(api(app, owner, 'GET', `/servers/${server}`))).toMatchObject({ rental_active: true })
    expect((await api(app, owner, 'DELETE', `/marketplaces/links/${server}/marketplace_a`)).status).toBe(204)
    expect(await read<Record<string, unknown>>(api(app, owner, 'GET', `/servers/${server}`))).toMatchObject({ rental_active: false })
    await agent.close()
  })
})

describe('failures recorded on the connection', () => {
  test('an unreachable or failing platform records the reason, leaves the status and every link as they were', async () => {
    const onA = async () => (await links()).filter((l) => l.marketplace === 'marketplace_a')
    const before = await onA()
    for (const mode of ['5xx', 'unreachable'] as const) {
      await simA.setMode(mode)
      await advance(60)
      expect(await sync()).toContain('1 failed')
      const conn = await connection('marketplace_a')
      expect(conn.status).toBe('connected')
      expect(conn.last_failure).toMatch(/could not be reached/)
      expect(conn.last_failure_at).not.toBeNull()
    }
    await simA.setMode('ok')
    expect(await onA()).toEqual(before)
  })

  test('a key that lost its permission records that, status unchanged; the next success clears the failure', async () => {
    simA.updateKey(KEY_A, { permissions: ['billing_read'] })
    await sync()
    const lacking = await connection('marketplace_a')
    expect(lacking.status).toBe('connected')
    expect(lacking.last_failure).toMatch(/permission/)
    simA.updateKey(KEY_A, { permissions: undefined })
    await sync()
    expect(await connection('marketplace_a')).toMatchObject({ status: 'connected', last_failure: null, last_failure_at: null })
  })

  test('a key the platform rejects marks the connection invalid_key, and it is not sent again', async () => {
    simA.revokeKey(KEY_A)
    await sync()
    const invalid = await connection('marketplace_a')
    expect(invalid.status).toBe('invalid_key')
    expect(invalid.last_failure).toMatch(/rejected the key/)
    simA.clearRequests()
    await sync()
    // Only the anonymous public offer search (market statistics) reached the platform.
    expect(simA.requests().filter((r) => r.endpoint !== 'bundles')).toEqual([])
    expect((await linkOf(s1)).state).toBe('linked') // links are kept, not marked stale
  })

  test('marketplace_b: code 3 is a rejection too; re-sending a good key reconnects and the next sync succeeds', async () => {
    const servers = simB.server(KEY_B, 'rig-full')!
    simB.removeOwner(KEY_B)
    await sync()
    expect((await connection('marketplace_b')).status).toBe('invalid_key')
    simB.addOwner(KEY_B, { label: 'alice', userId: 7, servers: [servers] })
    const again = await read<Connection>(api(app, owner, 'PUT', '/marketplaces/marketplace_b', { json: { api_key: KEY_B } }))
    expect(again).toMatchObject({ status: 'connected', last_failure: null })
    await sync()
    expect(await connection('marketplace_b')).toMatchObject({ status: 'connected', last_failure: null })
  })
})

describe('the keys after every run', () => {
  test('no key appears in any answer, log line, database file or WAL, nor in the simulators’ logs', async () => {
    const logs = app.rawLogs.join('\n')
    if (!onPostgres) expect(readdirSync(app.dir).some((f) => f === 'gpuhq.db-wal')).toBe(true)
    const stored = await storedText(app.deps.db, app.dir)
    const answers = seen.join('\n')
    for (const key of KEYS) {
      expect(logs).not.toContain(key)
      expect(stored).not.toContain(key)
      expect(answers).not.toContain(key)
    }
    expect(JSON.stringify(simA.requests()) + JSON.stringify(simB.requests)).not.toMatch(new RegExp(KEYS.join('|')))
  })
})
