import { afterEach, describe, expect, test } from 'bun:test'
import { type MarketplaceASim, startMarketplaceA } from '../../scripts/sim/marketplace-a'
import { createMarketplaceAAdapter } from '../../src/modules/marketplaces/adapters/marketplace-a/marketplace-a.adapter'
import { normaliseGpuModel } from '../../src/modules/marketplaces/adapters/gpu-model'
import { vastMoney } from '../../src/modules/marketplaces/adapters/marketplace-a/marketplace-a.mapping'
import { type MarketplaceCall, MarketplaceError, type RemoteMachine } from '../../src/modules/marketplaces/adapters/marketplaces.adapter'
import { vastFullMachine, vastFullRemote } from '../support/marketplaces'

/**
 * The marketplace_a adapter (Vast.ai's host API) against the marketplace_a simulator over real
 * HTTP: every `remote` field from a machine that sets it and null from one that does not, the three
 * failure outcomes, 429 retries and pacing as the simulator's request log saw them, and the key in
 * no message, no log entry and no call record.
 */

const NOW_US = 1_780_000_000_000_000 // 2026-05-28T20:26:40Z
const NOW_S = NOW_US / 1_000_000
const newKey = (tag: string) => `vastkey_${tag}_${crypto.randomUUID().replaceAll('-', '')}`

const KEYS = {
  full: newKey('full'),
  scoped: newKey('scoped'),
  scoped401: newKey('scoped401'),
  twoFactor: newKey('tfa'),
  expired: newKey('expired'),
  other: newKey('other'),
  unknown: newKey('unknown'),
}
const ALL_KEYS = Object.values(KEYS)

const OWNERS = [
  {
    id: 1001,
    email: 'host@example.com',
    keys: [
      { key: KEYS.full, label: 'full' },
      { key: KEYS.scoped, label: 'scoped', permissions: ['billing_read' as const] },
      { key: KEYS.scoped401, label: 'scoped401', permissions: ['billing_read' as const], deniedStatus: 401 as const },
      { key: KEYS.twoFactor, label: 'tfa', twoFactor: true },
      { key: KEYS.expired, label: 'expired', sessionExpired: true },
    ],
  },
  { id: 2002, email: 'someone@example.com', keys: [{ key: KEYS.other, label: 'other' }] },
]

const sims: MarketplaceASim[] = []
afterEach(async () => {
  for (const s of sims.splice(0)) await s.stop()
})

async function sim(options: Parameters<typeof startMarketplaceA>[0] = {}): Promise<MarketplaceASim> {
  const s = await startMarketplaceA({ owners: structuredClone(OWNERS), rateScale: 0, ...options })
  sims.push(s)
  return s
}

function adapter(s: { url: string }, extra: { paceScale?: number; retries?: number; timeoutMs?: number } = {}) {
  const calls: MarketplaceCall[] = []
  const a = createMarketplaceAAdapter({ baseUrl: s.url, nowUs: () => NOW_US, paceScale: 0.01, onCall: (c) => calls.push(c), ...extra })
  return { a, calls }
}

async function failureOf(p: Promise<unknown>): Promise<MarketplaceError> {
  try {
    await p
  } catch (e) {
    expect(e).toBeInstanceOf(MarketplaceError)
    return e as MarketplaceError
  }
  throw new Error('expected a MarketplaceError')
}

function expectNoKey(text: string) {
  for (const k of ALL_KEYS) expect(text).not.toContain(k)
}

const byId = (machines: RemoteMachine[], id: number) => {
  const m = machines.find((x) => x.externalMachineId === String(id))
  if (!m) throw new Error(`machine ${id} missing`)
  return m
}

describe('mapping Vast machines to the remote projection', () => {
  test('every remote field is mapped from a machine that sets it, and a machine that sets nothing maps to nulls', async () => {
    const s = await sim()
    s.putMachine(1001, 501, vastFullMachine(NOW_S))
    s.putMachine(1001, 502)
    s.putMachine(2002, 601, { hostname: 'not-mine' })
    const { a } = adapter(s)
    const machines = await a.listMachines(KEYS.full)
    expect(machines.map((m) => m.externalMachineId).sort()).toEqual(['501', '502'])

    const full = byId(machines, 501)
    expect(full.marketplaceB).toBeNull()
    expect(full.remote).toEqual(vastFullRemote('2026-05-28T21:26:40.000000Z'))
    expect(full.facts).toEqual({ hostname: 'rig-01', public_ip: '203.0.113.10', gpu_model: 'rtx_4090', gpu_count: 4, disk_gb: 6436, port_range_size: 16385 })

    const bare = byId(machines, 502)
    const { maintenance_announced, rentals, ...rest } = bare.remote
    expect(maintenance_announced).toBe(false)
    expect(rentals).toEqual([])
    for (const [field, value] of Object.entries(rest)) expect([field, value]).toEqual([field, null])
    expect(bare.facts).toEqual({ hostname: null, public_ip: null, gpu_model: null, gpu_count: null, disk_gb: null, port_range_size: null })
  })

  test('Vast nulls stay null (an unlisted machine has no price, never zero), and the other documented forms are read', async () => {
    const s = await sim()
    s.putMachine(1001, 505, {
      listed: false,
      listed_gpu_cost: null,
      min_bid_price: null,
      listed_inet_up_cost: null,
      earn_day: null,
      gpu_name: 'NVIDIA GeForce RTX 3090',
      num_gpus: 4,
      gpu_occupancy: '2/4',
      machine_maintenance: 'scheduled',
      error_description: null,
      vm_error_msg: 'vm: iommu off',
      max_disk_space: 7152,
      direct_port_count: null,
    })
    s.putMachine(1001, 503, { duration: 604800, end_date: 1760907030.0, listed_gpu_cost: 0.06999999999999999 })
    const { a } = adapter(s)
    const machines = await a.listMachines(KEYS.full)
    const m = byId(machines, 505).remote
    expect([m.listed, m.price_gpu_hour, m.min_bid_hour, m.price_inet_up_tb, m.earnings_day, m.direct_port_count]).toEqual([false, null, null, null, null, null])
    expect(m.gpu_model).toBe('rtx_3090')
    expect(m.gpu_occupancy).toBe('2/4')
    expect([m.maintenance_announced, m.maintenance_starts_at, m.maintenance_hours]).toEqual([true, null, null])
    expect(m.error).toBe('vm: iommu off')
    expect(byId(machines, 505).facts.disk_gb).toBe(7152)

    const rolling = byId(machines, 503).remote
    expect(rolling.ask_duration_seconds).toBe(604800)
    expect(rolling.end_date).toBe('2026-06-04T20:26:40.000000Z')
    expect(rolling.price_gpu_hour).toBe('0.07')
  })

  test('rentals attached in the simulator show as Vast counts them: running contracts, one occupancy character per card, no per-order rows', async () => {
    const s = await sim()
    s.putMachine(1001, 504, { num_gpus: 4, gpu_name: 'H100 SXM' })
    s.addRental(504, { kind: 'on_demand', gpus: 2, running: true })
    s.addRental(504, { kind: 'interruptible', gpus: 1, running: true })
    s.addRental(504, { kind: 'reserved', gpus: 1, running: false })
    const { a } = adapter(s)
    const m = byId(await a.listMachines(KEYS.full), 504).remote
    expect(m.rentals_running).toBe(2)
    expect(m.gpu_occupancy).toBe('DDIx')
    expect(m.gpu_occupancy?.length).toBe(m.gpu_count as number)
    expect(m.gpu_model).toBe('h100_sxm')
    expect(m.rentals).toEqual([])
  })

  test('per-GB prices become per-TB and money is exact decimal text, never a float', () => {
    expect(vastMoney(0.005, 1000)).toBe('5.00')
    expect(vastMoney(0.01, 1000)).toBe('10.00')
    expect(vastMoney(0.0123456789, 1000)).toBe('12.345679')
    expect(vastMoney(0.30000000000000004)).toBe('0.30')
    expect(vastMoney(0.06999999999999999)).toBe('0.07')
    expect(vastMoney(8.088995e-55)).toBe('0.00')
    expect(vastMoney(3.601685e-5)).toBe('0.000036')
    expect(vastMoney(null)).toBeNull()
    expect(vastMoney('0.5')).toBeNull()
    expect(vastMoney(-1)).toBeNull()
  })

  test('GPU names normalise to the model key: lowercase, vendor words dropped, words joined by underscores', () => {
    expect(normaliseGpuModel('RTX 4090')).toBe('rtx_4090')
    expect(normaliseGpuModel('NVIDIA GeForce RTX 4090')).toBe('rtx_4090')
    expect(normaliseGpuModel('RTX_3090')).toBe('rtx_3090')
    expect(normaliseGpuModel('Tesla V100')).toBe('v100')
    expect(normaliseGpuModel('RTX A6000')).toBe('rtx_a6000')
    expect(normaliseGpuModel('AMD Radeon RX 7900 XTX')).toBe('rx_7900_xtx')
    expect(normaliseGpuModel('NVIDIA')).toBeNull()
    expect(normaliseGpuModel(null)).toBeNull()
  })
})

describe('verifying a key', () => {
  test('a good key says whose it is: the numeric Vast user id, and that it can read the machines; the key travels only as a Bearer header', async () => {
    const s = await sim()
    const { a, calls } = adapter(s)
    expect(await a.verifyKey(KEYS.full)).toEqual({ owner: '1001', holdingUsd: null })
    expect(await a.verifyKey(KEYS.other)).toEqual({ owner: '2002', holdingUsd: null })
    const log = s.requests()
    expect(log.map((e) => [e.method, e.path, e.query, e.identity, e.status])).toEqual([
      ['GET', '/api/v0/users/current/', '', 'full', 200],
      ['GET', '/api/v0/machines/', 'owner=me', 'full', 200],
      ['GET', '/api/v0/users/current/', '', 'other', 200],
      ['GET', '/api/v0/machines/', 'owner=me', 'other', 200],
    ])
    expect(calls.map((c) => [c.marketplace, c.operation, c.method, c.path, c.status, c.outcome])).toEqual([
      ['marketplace_a', 'account.verify', 'GET', '/api/v0/users/current/', 200, 'ok'],
      ['marketplace_a', 'account.verify_machines', 'GET', '/api/v0/machines/', 200, 'ok'],
      ['marketplace_a', 'account.verify', 'GET', '/api/v0/users/current/', 200, 'ok'],
      ['marketplace_a', 'account.verify_machines', 'GET', '/api/v0/machines/', 200, 'ok'],
    ])
    expect(calls[0]!.startedAtUs).toBe(NOW_US)
  })

  test('an unknown key is rejected; a scoped key, a 2FA-restricted key and an expired 2FA session are missing_permission', async () => {
    const s = await sim()
    const { a, calls } = adapter(s)
    const rejected = await failureOf(a.listMachines(KEYS.unknown))
    expect([rejected.marketplace, rejected.failure]).toEqual(['marketplace_a', 'rejected_key'])
    expect((await failureOf(a.verifyKey(KEYS.unknown))).failure).toBe('rejected_key')
    for (const key of [KEYS.scoped, KEYS.scoped401, KEYS.twoFactor, KEYS.expired]) {
      const e = await failureOf(a.listMachines(key))
      expect([key.split('_')[1], e.failure]).toEqual([key.split('_')[1], 'missing_permission'])
    }
    const tfa = await failureOf(a.verifyKey(KEYS.twoFactor))
    expect(tfa.failure).toBe('missing_permission')
    expect(tfa.message).toContain('two-factor')
    expect(s.requests().map((e) => e.status)).toEqual([401, 401, 403, 401, 401, 404, 401])
    expect(calls.map((c) => c.outcome)).toEqual([
      'rejected_key',
      'rejected_key',
      'missing_permission',
      'missing_permission',
      'missing_permission',
      'missing_permission',
      'missing_permission',
    ])
  })
})

describe('when the platform misbehaves', () => {
  test('an unreachable platform, a timeout and a 500 are unavailable and not retried; 502 is retried and then unavailable', async () => {
    const s = await sim()
    const { a, calls } = adapter(s, { timeoutMs: 300 })

    await s.setMode('unreachable')
    const down = await failureOf(a.listMachines(KEYS.full))
    expect(down.failure).toBe('unavailable')
    expect(calls.at(-1)).toMatchObject({ operation: 'machines.list', status: null, outcome: 'unavailable' })

    await s.setMode('slow', { delayMs: 1500 })
    expect((await failureOf(a.verifyKey(KEYS.full))).failure).toBe('unavailable')

    await s.setMode('5xx', { status: 500 })
    s.clearRequests()
    expect((await failureOf(a.listMachines(KEYS.full))).failure).toBe('unavailable')
    expect(s.requests().map((e) => e.status)).toEqual([500])

    await s.setMode('5xx', { status: 502 })
    s.clearRequests()
    const before = calls.length
    const bad = await failureOf(a.listMachines(KEYS.full))
    expect(bad.failure).toBe('unavailable')
    expect(s.requests().map((e) => e.status)).toEqual([502, 502, 502, 502])
    expect(calls.slice(before).map((c) => c.outcome)).toEqual(['retried', 'retried', 'retried', 'unavailable'])

    await s.setMode('ok')
    expect(await a.verifyKey(KEYS.full)).toEqual({ owner: '1001', holdingUsd: null })
  })

  test('a 200 that is not JSON, or JSON of the wrong shape, is unavailable', async () => {
    let body = '<html>maintenance</html>'
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(body, { status: 200 }) })
    try {
      const { a } = adapter({ url: `http://127.0.0.1:${server.port}` })
      expect((await failureOf(a.listMachines(KEYS.full))).failure).toBe('unavailable')
      body = '{"nothing": true}'
      expect((await failureOf(a.listMachines(KEYS.full))).failure).toBe('unavailable')
      expect((await failureOf(a.verifyKey(KEYS.full))).failure).toBe('unavailable')
    } finally {
      await server.stop(true)
    }
  })

  test('429 is retried with growing backoff (0.15 s, 0.225 s, 0.3375 s) and then unavailable with the threshold as a retry hint', async () => {
    // The simulator allows one machine list per 5 s; the adapter is told to pace at 10 ms, so it runs into the limit.
    for (const rateLimitBody of ['text', 'json'] as const) {
      const s = await sim({ rateScale: 1, rateLimits: { machines: 5 }, rateLimitBody })
      const { a, calls } = adapter(s)
      await a.listMachines(KEYS.full)
      const e = await failureOf(a.listMachines(KEYS.full))
      expect(e.failure).toBe('unavailable')
      expect(e.retryAfterSeconds).toBe(5)
      const log = s.requests()
      expect(log.map((x) => x.status)).toEqual([200, 429, 429, 429, 429])
      const gaps = log.slice(2).map((x, i) => x.time - log[i + 1]!.time)
      expect(gaps[0]).toBeGreaterThanOrEqual(145)
      expect(gaps[1]).toBeGreaterThanOrEqual(220)
      expect(gaps[2]).toBeGreaterThanOrEqual(332)
      expect(calls.map((c) => c.outcome)).toEqual(['ok', 'retried', 'retried', 'retried', 'unavailable'])
      expect(calls.map((c) => c.status)).toEqual([200, 429, 429, 429, 429])
    }
  })

  test('a 429 that clears within the retries is an ordinary answer', async () => {
    const s = await sim({ rateScale: 1, rateLimits: { machines: 0.3 } })
    const { a, calls } = adapter(s)
    await a.listMachines(KEYS.full)
    expect(await a.listMachines(KEYS.full)).toEqual([])
    const statuses = s.requests().map((x) => x.status)
    expect(statuses.slice(0, 2)).toEqual([200, 429])
    expect(statuses.at(-1)).toBe(200)
    expect(statuses.slice(1, -1).every((x) => x === 429)).toBe(true)
    expect(calls.map((c): string => c.outcome)).toEqual(['ok', ...statuses.slice(1, -1).map(() => 'retried'), 'ok'])
  })
})

describe('pacing', () => {
  test('calls of one key to one endpoint are spaced at the published interval; another key or endpoint has its own queue', async () => {
    // The adapter paces the starts of calls at 1.1 s. The simulator judges arrivals, which a loaded
    // machine can bunch by stalling one send: it enforces half of Vast's 1 s here, so a stall of up
    // to 0.6 s cannot decide the test, and the gaps are checked against that half.
    const s = await sim({ rateScale: 0.5 })
    const { a } = adapter(s, { paceScale: 1 })
    await Promise.all([a.listMachines(KEYS.full), a.listMachines(KEYS.full), a.listMachines(KEYS.full), a.verifyKey(KEYS.full), a.listMachines(KEYS.other)])
    const log = s.requests()
    expect(log.every((e) => e.status === 200)).toBe(true)
    // Three lists and the machine read of verifyKey share the queue of one key and one endpoint.
    const mine = log.filter((e) => e.identity === 'full' && e.endpoint === 'machines').map((e) => e.time)
    expect(mine).toHaveLength(4)
    for (let i = 1; i < mine.length; i++) expect(mine[i]! - mine[i - 1]!).toBeGreaterThanOrEqual(500)
    // The other queues did not wait behind the first key's machine list.
    const firstOf = (identity: string, endpoint: string) => log.find((e) => e.identity === identity && e.endpoint === endpoint)!.time
    expect(firstOf('full', 'user')).toBeLessThan(mine[1]!)
    expect(firstOf('other', 'machines')).toBeLessThan(mine[1]!)
  })
})

describe('the key stays secret', () => {
  test('no error message, request-log path or query, or call record holds the key', async () => {
    const s = await sim()
    const { a, calls } = adapter(s)
    const messages: string[] = []
    s.putMachine(1001, 501, { hostname: 'rig-01' })
    await a.listMachines(KEYS.full)
    await a.verifyKey(KEYS.full)
    for (const key of [KEYS.unknown, KEYS.scoped, KEYS.twoFactor, KEYS.expired]) {
      messages.push((await failureOf(a.listMachines(key))).message)
      // users/current needs no permission group: a scoped key fails at verifyKey's machine read.
      messages.push((await failureOf(a.verifyKey(key))).message)
    }
    expect((await failureOf(a.verifyKey(KEYS.scoped))).failure).toBe('missing_permission')
    await s.setMode('5xx', { status: 503 })
    messages.push((await failureOf(a.listMachines(KEYS.full))).message)
    await s.setMode('unreachable')
    messages.push((await failureOf(a.verifyKey(KEYS.full))).message)
    const control = await failureOf(a.verifyKey('bad key\nwith a newline'))
    expect(control.failure).toBe('rejected_key')
    expect(control.message).not.toContain('newline')

    expect(messages.every((m) => m.length > 0)).toBe(true)
    expectNoKey(messages.join('\n'))
    expectNoKey(JSON.stringify(s.requests()))
    expect(s.requests().every((e) => !e.query.includes('api_key'))).toBe(true)
    expectNoKey(JSON.stringify(calls))
    expect(calls.length).toBeGreaterThan(10)
  })
})
