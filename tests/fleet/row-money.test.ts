import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { utcDay } from '../../src/platform/time'
import { insertServer } from '../support/access'
import { startEarlyInUtcDay, startTestApp, type TestApp } from '../support/app'
import { onlineServer } from '../support/commands'
import { api, closeAllAgents, newOwner, ok, type Owner, type RawAgent } from '../support/fleet'

/**
 * Issue 35, finding 1: a fleet row tells where the server is listed or rented now, at what price,
 * what it earned today and how healthy it is, from what gpuhq keeps (the links the sync refreshes,
 * the accrual the sample job writes, the alert incidents), and GET /dashboard sums the same rows.
 * Marketplaces are the simulators speaking the platforms' wire format; time is the test clock.
 */

const KEY_A = 'vast-fleet-row-key-0123456789abcdef'
const KEY_B = 'clore-fleet-row-key-5f2e9a17c3'
const VAST_OWNER = 7272

type Row = Record<string, any> & { id: string; name: string }
type List = { items: Row[]; next_cursor: string | null }
type EarningsRow = { day: string; server_id: string; marketplace: string; earn_usd_accrued: string }

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Owner
let agent: RawAgent
const ids: Record<string, string> = {}
let byNameOnline = ''

beforeAll(async () => {
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: VAST_OWNER, email: 'rows@example.com', keys: [{ key: KEY_A, label: 'rows' }] }] })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    currencyRatesInUsd: { bitcoin: 60000, 'CLORE-Blockchain': 0.0025, 'USD-Blockchain': 1 },
    owners: {
      [KEY_B]: {
        label: 'rows',
        userId: 6,
        servers: [
          {
            name: 'rig-b',
            id: 62,
            online: true,
            visibility: 'public',
            specs: { gpu: '1x NVIDIA GeForce RTX 3090' },
            // 2000 CLORE a day for the server's one card at 0.0025 USD per CLORE: 5 USD a day.
            pricing: { 'CLORE-Blockchain': 2000 },
            rentals: [{ id: 902, spot: true, currency: 'CLORE-Blockchain', price: 1440, renter: 'clore-renter-key-rows' }],
          },
        ],
      },
    },
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url })
  await startEarlyInUtcDay(app) // these tests read today's figures while they move the clock on
  owner = await newOwner(app, 'fleet-money', 'pro')
  for (const name of ['rig-a', 'rig-b', 'rig-idle', 'rig-plain']) ids[name] = await insertServer(app, owner.tenantId, name)
  // What their agents would have reported: the cards the platforms rent out.
  for (const [name, gpus] of [
    ['rig-a', 2],
    ['rig-b', 1],
    ['rig-idle', 1],
    ['rig-plain', 4],
  ] as const)
    await app.deps.db.run(sql`UPDATE servers SET gpu_count = ${gpus} WHERE id = ${ids[name]!}`)
  ;({ agent, server_id: ids['rig-online'] } = await onlineServer(app, owner))
  agent.heartbeat()
  await agent.barrier()
  byNameOnline = (await ok<{ name: string }>(await api(app, owner, 'GET', `/servers/${ids['rig-online']}`))).name
  // Two cards listed at 0.50 USD per GPU-hour, both rented on demand; one card listed at 0.40, idle.
  simA.putMachine(VAST_OWNER, 811, { hostname: 'rig-811', listed: true, num_gpus: 2, gpu_name: 'RTX 4090', listed_gpu_cost: 0.5 })
  simA.addRental(811, { kind: 'on_demand', gpus: 2, running: true })
  simA.putMachine(VAST_OWNER, 812, { hostname: 'rig-812', listed: true, num_gpus: 1, gpu_name: 'RTX 4090', listed_gpu_cost: 0.4 })
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY_A } }))
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_b', { json: { api_key: KEY_B } }))
  for (const [name, marketplace, machine] of [
    ['rig-a', 'marketplace_a', '811'],
    ['rig-idle', 'marketplace_a', '812'],
    ['rig-b', 'marketplace_b', '62'],
  ] as const)
    await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: ids[name], marketplace, external_machine_id: machine } }), 201)
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
  await simA.stop()
  await simB.stop()
})

async function job(name: string): Promise<void> {
  expect(await ok<{ outcome: string }>(app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' }))).toMatchObject({ outcome: 'succeeded' })
}
const advance = (seconds: number) => ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
const list = async (qs = '') => ok<List>(await api(app, owner, 'GET', `/servers${qs}`))
const byName = (l: List) => Object.fromEntries(l.items.map((r) => [r.name, r]))
const today = () => utcDay(app.deps.clock.nowUs())
const micros = (s: string) => Math.round(Number(s) * 1_000_000)

/** What GET /marketplaces/earnings says the server accrued on the day, summed over marketplaces (micro-USD). */
async function earnedOn(serverId: string, day = today()): Promise<number> {
  const e = await ok<{ items: EarningsRow[] }>(await api(app, owner, 'GET', '/marketplaces/earnings?days=2'))
  return e.items.filter((r) => r.server_id === serverId && r.day === day).reduce((a, r) => a + micros(r.earn_usd_accrued), 0)
}

describe('a fleet row shows its marketplace, price, revenue today and health', () => {
  test('health: ok for an online server without incidents, critical for an offline one or one with an open critical incident', async () => {
    let rows = byName(await list())
    expect(rows[byNameOnline]).toMatchObject({ presence: 'online', health: 'ok', open_incidents: 0 })
    expect(rows['rig-plain']).toMatchObject({ presence: 'offline', health: 'critical' })
    // A GPU at 92 °C: alerts.evaluate opens a critical incident, and the row says so at once.
    agent.telemetry({ 0: { temperature_c: 92 } }, undefined, new Date(app.deps.clock.nowUs() / 1000).toISOString())
    await agent.barrier()
    await job('metrics.rollup')
    await job('alerts.evaluate')
    rows = byName(await list())
    expect(rows[byNameOnline]).toMatchObject({ health: 'critical', open_incidents: 1 })
    expect((await list('?health=critical')).items.map((r) => r.name)).toContain(byNameOnline)
    agent.telemetry({ 0: { temperature_c: 60 } }, undefined, new Date(app.deps.clock.nowUs() / 1000).toISOString())
    await agent.barrier()
    await job('metrics.rollup')
    await job('alerts.evaluate')
    expect(byName(await list())[byNameOnline]).toMatchObject({ health: 'ok', open_incidents: 0 })
  })

  test('a server linked to a listed, rented machine: its marketplace, its listed price per GPU-hour and rented', async () => {
    await job('marketplaces.sync')
    const rows = byName(await list())
    expect(rows['rig-a']).toMatchObject({ marketplace: 'marketplace_a', price_usd_gpu_h: '0.50', rental_state: 'rented', rented_gpu_count: 2 })
    // Clore's 2000 CLORE a day for one card at the 0.0025 the sync read: 5 USD a day, 0.208333 an hour.
    expect(rows['rig-b']).toMatchObject({ marketplace: 'marketplace_b', price_usd_gpu_h: '0.208333', rental_state: 'rented', rented_gpu_count: 1 })
    expect(rows['rig-idle']).toMatchObject({ marketplace: 'marketplace_a', price_usd_gpu_h: '0.40', rental_state: 'idle', rented_gpu_count: 0 })
    expect(rows['rig-plain']).toMatchObject({ marketplace: null, price_usd_gpu_h: null, rental_state: null, rented_gpu_count: 0, revenue_today_usd: '0.00' })
  })

  test("revenue_today_usd is the earnings endpoint's accrual for the server and today, moved by the sync and sample jobs and the clock", async () => {
    await job('earnings.sample')
    const before = byName(await list())
    await advance(3600 - 60)
    await job('marketplaces.sync')
    await advance(60)
    await job('earnings.sample')
    const rows = byName(await list())
    for (const name of ['rig-a', 'rig-b']) {
      const earned = await earnedOn(ids[name]!)
      expect(earned).toBeGreaterThan(0)
      expect({ name, revenue: micros(rows[name]!.revenue_today_usd) }).toEqual({ name, revenue: earned })
      expect(micros(rows[name]!.revenue_today_usd)).toBeGreaterThan(micros(before[name]!.revenue_today_usd))
    }
    // Two cards at 0.50 for about an hour: about 1 USD.
    expect(Number(rows['rig-a']!.revenue_today_usd)).toBeGreaterThanOrEqual(1)
    expect(Number(rows['rig-a']!.revenue_today_usd)).toBeLessThan(1.1)
    expect(rows['rig-idle']!.revenue_today_usd).toBe('0.00')
  })

  test("after midnight UTC a row shows the new day's accrual only, again the earnings endpoint's", async () => {
    const now = app.deps.clock.nowUs()
    // The clock starts at the real time: a midnight less than 4 minutes away is passed for the next.
    const next = Math.ceil(now / 86_400_000_000) * 86_400 - Math.floor(now / 1_000_000)
    const toMidnight = next > 300 ? next : next + 86_400
    await advance(toMidnight - 240)
    await job('marketplaces.sync')
    await advance(600)
    await job('earnings.sample')
    const rows = byName(await list())
    const earned = await earnedOn(ids['rig-a']!)
    expect(earned).toBeGreaterThan(0)
    // Six minutes of 24 USD a day, give or take a sample's rounding: far from the day before's.
    expect(earned).toBeLessThan(200_000)
    expect(micros(rows['rig-a']!.revenue_today_usd)).toBe(earned)
  })

  test('?marketplace= finds the servers listed or rented there; the other filters work on the same values', async () => {
    const names = async (qs: string) => (await list(qs)).items.map((r) => r.name).sort()
    expect(await names('?marketplace=marketplace_a')).toEqual(['rig-a', 'rig-idle'])
    expect(await names('?marketplace=marketplace_b')).toEqual(['rig-b'])
    expect(await names('?rental_state=rented')).toEqual(['rig-a', 'rig-b'])
    expect(await names('?rental_state=idle')).toEqual(['rig-idle'])
    expect(await names('?rental_state=none')).toEqual([byNameOnline, 'rig-plain'].sort())
    expect((await api(app, owner, 'GET', '/servers?health=bad')).status).toBe(422)
  })
})

describe('GET /dashboard sums the rows', () => {
  test('revenue_today_usd is the sum of the rows; GPUs by what they do add up to the total', async () => {
    const rows = (await list()).items
    const d = await ok<Record<string, any>>(await api(app, owner, 'GET', '/dashboard'))
    const sum = rows.reduce((a, r) => a + micros(r.revenue_today_usd), 0)
    expect(sum).toBeGreaterThan(0)
    expect(micros(d.revenue_today_usd)).toBe(sum)
    expect(d.gpus.rented + d.gpus.idle + d.gpus.unlisted + d.gpus.offline).toBe(d.gpus.total)
    // rig-a's two cards and rig-b's one rented; rig-idle's card idle (both offline here: no agent), so offline.
    expect(d.servers).toMatchObject({ total: 5, rented: 2, idle: 1 })
    expect(d.servers.health.ok + d.servers.health.warning + d.servers.health.critical).toBe(5)
  })

  test('the snapshot and its ETag change when the accrual moves; an unchanged one answers 304', async () => {
    const first = await api(app, owner, 'GET', '/servers')
    const tag = first.headers.get('etag')!
    await first.text()
    const again = await api(app, owner, 'GET', '/servers', { headers: { 'if-none-match': tag } })
    expect(again.status).toBe(304)
    await job('marketplaces.sync')
    await advance(300)
    await job('earnings.sample')
    const moved = await api(app, owner, 'GET', '/servers', { headers: { 'if-none-match': tag } })
    expect(moved.status).toBe(200)
    const rows = byName((await moved.json()) as List)
    expect(micros(rows['rig-a']!.revenue_today_usd)).toBe(await earnedOn(ids['rig-a']!))
  })
})
