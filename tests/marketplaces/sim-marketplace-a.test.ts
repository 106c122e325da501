import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { type MarketplaceASim, startMarketplaceA } from '../../scripts/sim/marketplace-a'
import type { OfferFields } from '../../scripts/sim/marketplace-a.types'

/**
 * The Vast.ai host-API simulator over real HTTP: auth (header and legacy query), every error
 * outcome, pacing with a plain-text 429 and no Retry-After, the bare-list machine read, absent
 * fields, the public offer search, the switches, and a request log with bodies that never holds a key.
 */

const KEY = 'vast-key-owner-one-0123456789abcdef'
const READ_ONLY = 'vast-key-read-only-0123456789abcdef'
const NO_SCOPE_401 = 'vast-key-no-billing-0123456789abcde'
const TFA = 'vast-key-2fa-0123456789abcdef012345'
const EXPIRED = 'vast-key-expired-0123456789abcdef01'
const OTHER = 'vast-key-owner-two-0123456789abcdef'
const ALL_KEYS = [KEY, READ_ONLY, NO_SCOPE_401, TFA, EXPIRED, OTHER, 'not-a-key-anyone-holds']

const owners = () => [
  {
    id: 456,
    email: 'host@example.com',
    credit: 12.5,
    keys: [
      { key: KEY, label: 'owner-one' },
      { key: READ_ONLY, label: 'read-only', permissions: ['machine_read' as const] },
      { key: NO_SCOPE_401, label: 'no-billing', permissions: ['machine_read' as const, 'machine_write' as const], deniedStatus: 401 as const },
      { key: TFA, label: '2fa', twoFactor: true },
      { key: EXPIRED, label: 'expired', sessionExpired: true },
    ],
  },
  { id: 789, email: 'other@example.com', keys: [{ key: OTHER, label: 'owner-two' }] },
]

let sim: MarketplaceASim
const call = (path: string, init: RequestInit & { key?: string } = {}) => {
  const headers = new Headers(init.headers)
  if (init.key) headers.set('authorization', `Bearer ${init.key}`)
  return fetch(sim.url + path, { ...init, headers })
}
const put = (path: string, body: unknown, key = KEY) =>
  call(path, { method: 'PUT', key, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })

beforeAll(async () => {
  sim = await startMarketplaceA({ owners: owners(), rateScale: 0 })
  sim.putMachine(KEY, 1001, {
    hostname: 'rig-a',
    listed: true,
    verification: 'verified',
    reliability2: 0.9701771,
    gpu_name: 'RTX 4090',
    num_gpus: 4,
    gpu_ram: 24564,
  })
  sim.putMachine(456, 1002, { hostname: 'rig-b' })
  sim.putMachine(OTHER, 2001, { hostname: 'not-yours' })
})
afterAll(() => sim.stop())

describe('auth', () => {
  test('the Bearer header and the legacy api_key query both work; the key check answers the user', async () => {
    const viaHeader = await call('/api/v0/users/current/', { key: KEY })
    expect(viaHeader.status).toBe(200)
    expect(await viaHeader.json()).toEqual({ id: 456, email: 'host@example.com', credit: 12.5 })
    const viaQuery = await call(`/api/v0/machines/?owner=me&api_key=${KEY}`)
    expect(viaQuery.status).toBe(200)
    expect(((await viaQuery.json()) as any).machines.map((m: any) => m.id)).toEqual([1001, 1002])
  })

  test('every error outcome has the documented status and body', async () => {
    const cases: [RequestInit & { key?: string }, string, number, string][] = [
      [{}, '/api/v0/machines/?owner=me', 403, 'This action requires login.'],
      [{ key: 'not-a-key-anyone-holds' }, '/api/v0/machines/?owner=me', 401, 'Invalid user key'],
      [{ key: 'not-a-key-anyone-holds' }, '/api/v1/invoices', 404, 'Invalid user key'],
      [{ key: READ_ONLY }, '/api/v0/users/me/machine-earnings?owner=me', 403, 'billing_read'],
      [{ key: NO_SCOPE_401 }, '/api/v0/users/me/machine-earnings?owner=me', 401, 'billing_read'],
      [{ key: TFA }, '/api/v0/machines/?owner=me', 401, 'Two Factor Authentication'],
      [{ key: EXPIRED }, '/api/v0/users/current/', 404, 'Session expired. Please log in again.'],
    ]
    for (const [init, path, status, msg] of cases) {
      const res = await call(path, init)
      expect(res.status).toBe(status)
      const body = (await res.json()) as any
      expect(body.success).toBe(false)
      expect(body.msg).toContain(msg)
      if (msg !== 'Session expired. Please log in again.') expect(body.error).toBe('auth_error')
    }
    const write = await call('/api/v0/machines/1001/asks/', { method: 'DELETE', key: READ_ONLY })
    expect(write.status).toBe(403)
    expect(((await write.json()) as any).msg).toContain('machine_write')
  })
})

describe('machines', () => {
  test("GET /machines/{id} is a bare one-element list; another owner's machine is not found", async () => {
    const one = await call('/api/v0/machines/1001?owner=me', { key: KEY })
    const body = (await one.json()) as any[]
    expect(Array.isArray(body)).toBe(true)
    expect(body).toHaveLength(1)
    expect(body[0]).toMatchObject({ id: 1001, machine_id: 1001, hostname: 'rig-a', reliability2: 0.9701771 })
    expect((await call('/api/v0/machines/2001?owner=me', { key: KEY })).status).toBe(404)
  })

  test('a field left unset is absent (not null, not 0); updating with undefined removes it', async () => {
    const [m] = (await (await call('/api/v0/machines/1002?owner=me', { key: KEY })).json()) as any[]
    expect(m).toEqual({ id: 1002, machine_id: 1002, hostname: 'rig-b' })
    sim.updateMachine(1002, { listed_inet_up_cost: 0.005, end_date: null, gpu_occupancy: 'D D x x ' })
    const [set] = (await (await call('/api/v0/machines/1002?owner=me', { key: KEY })).json()) as any[]
    expect(set).toMatchObject({ listed_inet_up_cost: 0.005, end_date: null, gpu_occupancy: 'D D x x ' })
    sim.updateMachine(1002, { listed_inet_up_cost: undefined, end_date: undefined, gpu_occupancy: undefined })
    const [back] = (await (await call('/api/v0/machines/1002?owner=me', { key: KEY })).json()) as any[]
    expect(back).toEqual({ id: 1002, machine_id: 1002, hostname: 'rig-b' })
  })

  test('rentals drive the counters, gpu_occupancy and client_end_date; create_asks extends contracts', async () => {
    const now = Math.floor(Date.now() / 1000)
    const od = sim.addRental(1001, { kind: 'on_demand', gpus: 2, running: true, end_date: now + 86400 })
    sim.addRental(1001, { kind: 'interruptible', gpus: 1, running: false })
    const [m] = (await (await call('/api/v0/machines/1001?owner=me', { key: KEY })).json()) as any[]
    expect(m).toMatchObject({
      gpu_occupancy: 'D D x x ',
      current_rentals_running: 1,
      current_rentals_running_on_demand: 1,
      current_rentals_on_demand: 1,
      current_rentals_resident: 2,
      client_end_date: now + 86400,
    })
    const asks = await put('/api/v0/machines/create_asks/', { machine: 1001, price_gpu: 0.45, price_inetu: 0.004, min_chunk: 1, end_date: now + 7 * 86400 })
    expect(await asks.json()).toEqual({ success: true, extended: 1 })
    const [after] = (await (await call('/api/v0/machines/1001?owner=me', { key: KEY })).json()) as any[]
    expect(after).toMatchObject({
      listed: true,
      listed_gpu_cost: 0.45,
      listed_inet_up_cost: 0.004,
      end_date: now + 7 * 86400,
      client_end_date: now + 7 * 86400,
    })
    sim.removeRental(od)
  })

  test('a rental whose end_date passed on the simulator clock has ended; a dnotify start is checked against that clock', async () => {
    let nowMs = 2_000_000_000_000
    const s = await startMarketplaceA({ owners: owners(), rateScale: 0, clock: () => nowMs })
    try {
      s.putMachine(KEY, 1201, { hostname: 'rig-clock', num_gpus: 2 })
      const nowS = nowMs / 1000
      s.addRental(1201, { kind: 'on_demand', gpus: 2, running: true, end_date: nowS + 3600 })
      const read = async () => {
        const res = await fetch(`${s.url}/api/v0/machines/1201?owner=me`, { headers: { authorization: `Bearer ${KEY}` } })
        return ((await res.json()) as any[])[0]
      }
      expect(await read()).toMatchObject({ current_rentals_running: 1, client_end_date: nowS + 3600, gpu_occupancy: 'D D ' })
      nowMs += 3600 * 1000
      expect(await read()).toMatchObject({ current_rentals_running: 0, client_end_date: null, gpu_occupancy: 'x x ' })
      // The simulator's now, not the real one, decides whether a window starts in the future.
      const dnotify = (sdate: number) =>
        fetch(`${s.url}/api/v0/machines/1201/dnotify/`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ client_id: 'me', sdate, duration: 2, maintenance_category: 'software' }),
        })
      expect((await dnotify(nowMs / 1000 - 60)).status).toBe(400)
      expect((await dnotify(nowMs / 1000 + 60)).status).toBe(200)
    } finally {
      await s.stop()
    }
  })
})

describe('host writes', () => {
  test("create_asks: null min_chunk is 400, another owner's machine is 403 not_authorized", async () => {
    const nullChunk = await put('/api/v0/machines/create_asks/', { machine: 1001, price_gpu: 0.4, min_chunk: null })
    expect(nullChunk.status).toBe(400)
    expect(await nullChunk.json()).toEqual({ success: false, error: 'invalid_args', msg: 'Invalid machine id or min_chunk' })
    const notMine = await put('/api/v0/machines/create_asks/', { machine: 2001, price_gpu: 0.4, min_chunk: 1 })
    expect(notMine.status).toBe(403)
    expect(await notMine.json()).toEqual({ success: false, error: 'not_authorized', msg: 'Only machine owner can create ask contracts' })
  })

  test('unlist, min bid, maintenance schedule / list / cancel', async () => {
    const unlist = await call('/api/v0/machines/1001/asks/', { method: 'DELETE', key: KEY })
    expect(await unlist.json()).toEqual({ success: true, machine_id: 1001, user_id: 456 })
    expect(await (await put('/api/v0/machines/1001/minbid/', { client_id: 'me', price: 0.25 })).json()).toEqual({
      success: true,
      you_sent: { client_id: 'me', price: 0.25 },
    })
    const sdate = Math.floor(Date.now() / 1000) + 3600
    expect((await put('/api/v0/machines/1001/dnotify/', { client_id: 'me', sdate: sdate - 7200, duration: 2, maintenance_category: 'power' })).status).toBe(400)
    const maint = await put('/api/v0/machines/1001/dnotify/', {
      client_id: 'me',
      sdate,
      duration: 2.7,
      maintenance_category: 'disk',
      maintenance_reason: 'swap',
    })
    expect(((await maint.json()) as any).success).toBe(true)
    const list = (await (await call('/api/v0/machines/maintenances?owner=me&machine_ids=%5B1001%5D', { key: KEY })).json()) as any[]
    expect(list).toEqual([
      expect.objectContaining({ machine_id: 1001, start_time: sdate, end_time: sdate + 7200, duration_hours: 2, maintenance_category: 'disk' }),
    ])
    const [m] = (await (await call('/api/v0/machines/1001?owner=me', { key: KEY })).json()) as any[]
    expect(m).toMatchObject({ listed: false, min_bid_price: 0.25, machine_maintenance: [expect.objectContaining({ maintenance_reason: 'swap' })] })
    const cancel = (await (await put('/api/v0/machines/1001/cancel_maint/', { client_id: 'me', machine_id: 1001 })).json()) as any
    expect(cancel).toMatchObject({ success: true, machine_id: 1001, msg: 'deleted 1 scheduled maintenance window(s) on machine 1001' })
    const missing = await put('/api/v0/machines/2001/cancel_maint/', { client_id: 'me', machine_id: 2001 })
    expect(missing.status).toBe(404)
    expect(((await missing.json()) as any).msg).toBe('No such machine id')
  })

  test('earnings aggregate per machine and per day within sday..eday', async () => {
    sim.addEarnings(KEY, [
      { machine_id: 1001, day: 20399, gpu_earn: 2.15, sto_earn: 0.09, bwu_earn: 0, bwd_earn: 0 },
      { machine_id: 1002, day: 20399, gpu_earn: 1, sto_earn: 0, bwu_earn: 0.5, bwd_earn: 0 },
      { machine_id: 1001, day: 20300, gpu_earn: 9, sto_earn: 0, bwu_earn: 0, bwd_earn: 0 },
    ])
    const res = await call('/api/v0/users/me/machine-earnings?owner=me&sday=20399.2&eday=20399.9&machid=1001', { key: KEY })
    expect(await res.json()).toEqual({
      sday: 20399,
      eday: 20399,
      summary: { total_gpu: 2.15, total_stor: 0.09, total_bwu: 0, total_bwd: 0 },
      username: 'host@example.com',
      email: 'host@example.com',
      current: { balance: 0, service_fee: 0, total: 0, credit: 0 },
      per_machine: [{ machine_id: 1001, gpu_earn: 2.15, sto_earn: 0.09, bwu_earn: 0, bwd_earn: 0 }],
      per_day: [{ day: 20399, gpu_earn: 2.15, sto_earn: 0.09, bwu_earn: 0, bwd_earn: 0 }],
    })
  })
})

describe('pacing', () => {
  test('a second call inside the interval is 429 in plain text with no Retry-After; per endpoint and identity', async () => {
    // unlist 1.8 s → 900 ms: wide enough that a loaded machine cannot space the second call past it.
    const paced = await startMarketplaceA({ owners: owners(), rateScale: 0.5 })
    try {
      paced.putMachine(KEY, 1, { listed: true })
      paced.putMachine(OTHER, 2, { listed: true })
      const unlist = (id: number, key: string) =>
        fetch(`${paced.url}/api/v0/machines/${id}/asks/`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } })
      expect((await unlist(1, KEY)).status).toBe(200)
      const limited = await unlist(1, KEY)
      expect(limited.status).toBe(429)
      expect(limited.headers.get('retry-after')).toBeNull()
      expect(limited.headers.get('content-type')).toStartWith('text/plain')
      expect(await limited.text()).toBe('API requests too frequent: endpoint threshold=0.9')
      expect((await unlist(2, OTHER)).status).toBe(200) // another identity
      expect((await fetch(`${paced.url}/api/v0/machines/?owner=me`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200) // another endpoint
      await Bun.sleep(950)
      expect((await unlist(1, KEY)).status).toBe(200)
      const log = paced.requests().filter((e) => e.endpoint === 'unlist' && e.identity === 'owner-one')
      expect(log.map((e) => e.status)).toEqual([200, 429, 200])
      expect(log[2].time - log[0].time).toBeGreaterThanOrEqual(900)
    } finally {
      await paced.stop()
    }
  })

  test('the JSON 429 form', async () => {
    const paced = await startMarketplaceA({ owners: owners(), rateLimits: { user: 5 }, rateLimitBody: 'json' })
    try {
      const me = () => fetch(`${paced.url}/api/v0/users/current/`, { headers: { authorization: `Bearer ${KEY}` } })
      await me()
      const limited = await me()
      expect(limited.status).toBe(429)
      expect(limited.headers.get('retry-after')).toBeNull()
      expect(await limited.json()).toEqual({ detail: 'API requests too frequent endpoint threshold=5' })
    } finally {
      await paced.stop()
    }
  })
})

describe('switches and the request log', () => {
  test('5xx, slow and unreachable, then back to ok on the same URL', async () => {
    await sim.setMode('5xx', { status: 503 })
    expect((await call('/api/v0/users/current/', { key: KEY })).status).toBe(503)
    await sim.setMode('slow', { delayMs: 300 })
    const started = Date.now()
    expect((await call('/api/v0/users/current/', { key: KEY })).status).toBe(200)
    expect(Date.now() - started).toBeGreaterThanOrEqual(290)
    await sim.setMode('unreachable')
    await expect(call('/api/v0/users/current/', { key: KEY })).rejects.toThrow()
    await sim.setMode('ok')
    expect((await call('/api/v0/users/current/', { key: KEY })).status).toBe(200)
  })

  test('the log has method, path, query without the key, identity, status and time, and never a key', async () => {
    const everything = JSON.stringify(sim.requests())
    for (const key of ALL_KEYS) expect(everything).not.toContain(key)
    sim.clearRequests()
    await call(`/api/v0/machines/?owner=me&api_key=${KEY}`)
    await call('/api/v0/users/current/', { key: 'not-a-key-anyone-holds' })
    await call('/api/v0/users/current/')
    const log = sim.requests()
    expect(log.map(({ time: _t, ...e }) => e)).toEqual([
      { method: 'GET', path: '/api/v0/machines/', query: 'owner=me', endpoint: 'machines', identity: 'owner-one', status: 200, body: null },
      {
        method: 'GET',
        path: '/api/v0/users/current/',
        query: '',
        endpoint: 'user',
        identity: expect.stringMatching(/^sha256:[0-9a-f]{12}$/),
        status: 401,
        body: null,
      },
      { method: 'GET', path: '/api/v0/users/current/', query: '', endpoint: 'user', identity: 'anonymous', status: 403, body: null },
    ])
    expect(log.every((e) => Math.abs(Date.now() - e.time) < 10_000)).toBe(true)
    const text = JSON.stringify(log)
    for (const key of ALL_KEYS) expect(text).not.toContain(key)
  })
})

describe('request bodies in the log', () => {
  test('each entry has the exact JSON body sent; null for a GET or an empty body; the raw text when not JSON', async () => {
    sim.clearRequests()
    const asks = { machine: 1002, price_gpu: 0.5, price_disk: 0.15, price_min_bid: 0.3, min_chunk: 1, end_date: 4_102_444_800, nested: { list: [1, 'two'] } }
    expect((await put('/api/v0/machines/create_asks/', asks)).status).toBe(200)
    await call('/api/v0/machines/1002/asks/', { method: 'DELETE', key: KEY })
    await call('/api/v0/machines/?owner=me', { key: KEY })
    const raw = await call('/api/v0/machines/1002/minbid/', { method: 'PUT', key: KEY, body: 'price=0.2' })
    expect(raw.status).toBe(400)
    // Refused requests keep their body too: a 403 for a key without machine_write.
    await put('/api/v0/machines/1002/minbid/', { client_id: 'me', price: 0.2 }, READ_ONLY)
    expect(sim.requests().map((e) => [e.endpoint, e.status, e.body])).toEqual([
      ['create_asks', 200, asks],
      ['unlist', 200, null],
      ['machines', 200, null],
      ['minbid', 400, 'price=0.2'],
      ['minbid', 403, { client_id: 'me', price: 0.2 }],
    ])
  })

  test("an api_key field (at any depth, or in text) and the caller's own key anywhere are redacted", async () => {
    sim.clearRequests()
    await put('/api/v0/machines/1002/minbid/', { client_id: 'me', price: 0.2, api_key: KEY, extra: { api_key: 'another-secret', note: `key ${KEY} here` } })
    await call(`/api/v0/machines/1002/minbid/?api_key=${KEY}`, { method: 'PUT', body: `api_key=${OTHER}&price=0.2` })
    await call('/api/v0/machines/1002/minbid/', { method: 'PUT', key: KEY, body: '{"api_key": "half-sent-secret", "price": ' })
    expect(sim.requests().map((e) => e.body)).toEqual([
      { client_id: 'me', price: 0.2, api_key: '[redacted]', extra: { api_key: '[redacted]', note: 'key [redacted] here' } },
      'api_key=[redacted]&price=0.2',
      '{"api_key": "[redacted]", "price": ',
    ])
    const text = JSON.stringify(sim.requests())
    for (const secret of [...ALL_KEYS, 'another-secret', 'half-sent-secret']) expect(text).not.toContain(secret)
  })
})

describe('offer search (/bundles/)', () => {
  /** vast-cli `search offers` with its defaults: what a service copying the CLI sends. */
  const CLI_QUERY = {
    verified: { eq: true },
    external: { eq: false },
    rentable: { eq: true },
    rented: { eq: false },
    order: [['score', 'desc']],
    type: 'on-demand',
    allocated_storage: 5,
  }
  const RIG = {
    hostname: 'rig-a',
    listed: true,
    verification: 'verified' as const,
    reliability2: 0.98,
    gpu_name: 'RTX 4090',
    num_gpus: 4,
    gpu_ram: 24564,
    disk_space: 1800,
    geolocation: 'Sweden, SE',
    inet_up: 900,
    inet_down: 950,
    listed_gpu_cost: 0.4,
    min_bid_price: 0.25,
    listed_storage_cost: 0.1,
    listed_inet_up_cost: 0.005,
    listed_inet_down_cost: 0.004,
    end_date: 4_102_444_800,
  }
  const MARKET: Partial<OfferFields>[] = [
    {
      id: 7001,
      ask_contract_id: 7001,
      machine_id: 50,
      host_id: 9,
      gpu_name: 'RTX 4090',
      num_gpus: 1,
      dph_base: 0.35,
      dph_total: 0.37,
      min_bid: 0.2,
      rentable: true,
    },
    { id: 7002, machine_id: 51, host_id: 9, gpu_name: 'RTX 3090', num_gpus: 2, dph_base: 0.4, dph_total: 0.41, rentable: true },
    { id: 7003, machine_id: 52, host_id: 10, gpu_name: 'RTX 4090', num_gpus: 8, dph_base: 3.2, dph_total: 3.3, min_bid: 2, rentable: false },
  ]
  let s: MarketplaceASim
  const search = (query: unknown, key?: string) =>
    fetch(`${s.url}/api/v0/bundles/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify(query),
    })
  const offers = async (query: unknown, key?: string) => {
    const res = await search(query, key)
    expect(res.status).toBe(200)
    return ((await res.json()) as { offers: Record<string, unknown>[] }).offers
  }
  const ids = async (query: unknown) => (await offers(query)).map((o) => o.machine_id)

  beforeAll(async () => {
    s = await startMarketplaceA({ owners: owners(), rateScale: 0 })
    s.putMachine(KEY, 1001, RIG)
    s.putMachine(KEY, 1002, { ...RIG, hostname: 'unlisted', listed: false })
    s.putMachine(KEY, 1003, { hostname: 'no-price', listed: true, gpu_name: 'RTX 4090', num_gpus: 1 })
    s.putMachine(OTHER, 2001, { hostname: 'bare', listed: true, listed_gpu_cost: 0.2, inet_up: null })
    for (const o of MARKET) s.addMarketOffer(o)
  })
  afterAll(() => s.stop())

  test("anonymous: the listed machines' own offers (with Vast's fields) then the market's, for vast-cli's default query", async () => {
    const all = await offers(CLI_QUERY)
    expect(all.map((o) => o.machine_id)).toEqual([1001, 2001, 50, 51])
    const [rig, bare] = all
    expect(rig).toEqual({
      id: expect.any(Number),
      ask_contract_id: rig.id,
      machine_id: 1001,
      host_id: 456,
      gpu_name: 'RTX 4090',
      num_gpus: 4,
      reliability2: 0.98,
      // The name the CLI's self-test reads from an offer (host-operations section 1): the same fraction.
      reliability: 0.98,
      verification: 'verified',
      geolocation: 'Sweden, SE',
      gpu_ram: 24564,
      disk_space: 1800,
      storage_cost: 0.1,
      inet_up_cost: 0.005,
      inet_down_cost: 0.004,
      inet_up: 900,
      inet_down: 950,
      dph_base: 1.6,
      dph_total: 1.6,
      min_bid: 1,
      rentable: true,
    })
    // A field the machine does not set (or sets to null) is absent; one GPU when num_gpus is unset.
    expect(bare).toEqual({ id: expect.any(Number), ask_contract_id: bare.id, machine_id: 2001, host_id: 789, dph_base: 0.2, dph_total: 0.2, rentable: true })
    expect(rig.id).not.toBe(bare.id)
    expect(all[2]).toEqual(MARKET[0])
    // The ask id stays while the machine exists, even when it is put again.
    s.putMachine(KEY, 1001, RIG)
    expect((await offers({}))[0].id).toBe(rig.id)
  })

  test('the GET ?q=<JSON> form answers the same; a key is accepted too; a wrong key is 401', async () => {
    const q = encodeURIComponent(JSON.stringify(CLI_QUERY))
    const viaGet = await fetch(`${s.url}/api/v0/bundles/?q=${q}`)
    expect(viaGet.status).toBe(200)
    expect(await viaGet.json()).toEqual({ offers: await offers(CLI_QUERY) })
    expect(await offers(CLI_QUERY, KEY)).toEqual(await offers(CLI_QUERY))
    expect((await search(CLI_QUERY, 'not-a-key-anyone-holds')).status).toBe(401)
    const log = s.requests().filter((e) => e.endpoint === 'bundles')
    expect(log.map((e) => e.identity)).toContain('anonymous')
    expect(log.map((e) => e.identity)).toContain('owner-one')
    expect(log.find((e) => e.method === 'POST')?.body).toEqual(CLI_QUERY)
  })

  test('filters: gpu_name eq / in (underscores for spaces), num_gpus eq / gte / lte, rentable; limit', async () => {
    expect(await ids({ gpu_name: { eq: 'RTX_4090' } })).toEqual([1001, 50, 52])
    expect(await ids({ gpu_name: { in: ['RTX 3090', 'RTX_4090'] }, rentable: { eq: true } })).toEqual([1001, 50, 51])
    expect(await ids({ num_gpus: { eq: 4 } })).toEqual([1001])
    expect(await ids({ num_gpus: { gte: 2 } })).toEqual([1001, 51, 52])
    expect(await ids({ num_gpus: { gte: 2, lte: 4 } })).toEqual([1001, 51])
    expect(await ids({ rentable: { eq: false } })).toEqual([52])
    expect(await ids({ gpu_name: { eq: 'RTX 4090' }, limit: 2 })).toEqual([1001, 50])
    expect(await ids({ limit: 0 })).toEqual([])
    // Keys the simulator does not honour are ignored, whatever they say.
    expect(await ids({ reliability2: { gte: 0.999 }, dph_total: { lte: 0.01 }, order: [['dph_total', 'asc']] })).toEqual([1001, 2001, 50, 51, 52])
  })

  test('a bid (interruptible) search prices offers at min_bid and leaves out offers without one', async () => {
    for (const type of ['bid', 'interruptible']) {
      const bid = await offers({ type })
      expect(bid.map((o) => [o.machine_id, o.dph_base, o.dph_total])).toEqual([
        [1001, 1, 1],
        [50, 0.2, 0.2],
        [52, 2, 2],
      ])
    }
    expect((await offers({ type: 'reserved', num_gpus: { eq: 4 } }))[0].dph_base).toBe(1.6)
  })

  test('a rented-out or offline machine is not rentable; listing and unlisting move it in and out of the search', async () => {
    const rental = s.addRental(1001, { kind: 'on_demand', gpus: 4, running: true })
    expect((await offers({ num_gpus: { eq: 4 } }))[0].rentable).toBe(false)
    s.removeRental(rental)
    s.updateMachine(1001, { timeout: 301 })
    expect((await offers({ num_gpus: { eq: 4 } }))[0].rentable).toBe(false)
    s.updateMachine(1001, { timeout: 0 })
    const asks = await fetch(`${s.url}/api/v0/machines/create_asks/`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ machine: 1002, price_gpu: 0.45, price_min_bid: 0.3, min_chunk: 1 }),
    })
    expect(asks.status).toBe(200)
    expect((await offers({ num_gpus: { eq: 4 } })).map((o) => [o.machine_id, o.dph_base, o.min_bid, o.rentable])).toEqual([
      [1001, 1.6, 1, true],
      [1002, 1.8, 1.2, true],
    ])
    await fetch(`${s.url}/api/v0/machines/1002/asks/`, { method: 'DELETE', headers: { authorization: `Bearer ${KEY}` } })
    expect(await ids({ num_gpus: { eq: 4 } })).toEqual([1001])
  })

  test('market offers: a given id is kept (and replaced when added again), a new one is returned, clearMarketOffers empties the market', async () => {
    const id = s.addMarketOffer({ gpu_name: 'H100', num_gpus: 1, dph_base: 2.1 })
    expect(await offers({ gpu_name: { eq: 'H100' } })).toEqual([{ id, gpu_name: 'H100', num_gpus: 1, dph_base: 2.1 }])
    expect(s.addMarketOffer({ id, gpu_name: 'H100', num_gpus: 1, dph_base: 1.9 })).toBe(id)
    expect((await offers({ gpu_name: { eq: 'H100' } })).map((o) => o.dph_base)).toEqual([1.9])
    s.clearMarketOffers()
    expect(await ids({})).toEqual([1001, 2001])
    for (const o of MARKET) s.addMarketOffer(o)
  })

  test('a malformed honoured key or q is 400 invalid_args', async () => {
    for (const query of [
      { limit: 'ten' },
      { limit: 1.5 },
      { type: 'cheap' },
      { gpu_name: 'RTX 4090' },
      { num_gpus: { about: 4 } },
      { gpu_name: { in: 'RTX 4090' } },
    ]) {
      const res = await search(query)
      expect(res.status).toBe(400)
      expect(((await res.json()) as any).error).toBe('invalid_args')
    }
    expect((await fetch(`${s.url}/api/v0/bundles/?q=%7Bnot-json`)).status).toBe(400)
  })

  test('paced like other endpoints: 1.0 s per identity, the anonymous identity being the client address', async () => {
    const paced = await startMarketplaceA({ owners: owners() })
    try {
      const anon = () => fetch(`${paced.url}/api/v0/bundles/`, { method: 'POST', body: '{}' })
      expect((await anon()).status).toBe(200)
      const limited = await anon()
      expect(limited.status).toBe(429)
      expect(await limited.text()).toBe('API requests too frequent: endpoint threshold=1')
      const keyed = await fetch(`${paced.url}/api/v0/bundles/`, { method: 'POST', body: '{}', headers: { authorization: `Bearer ${KEY}` } })
      expect(keyed.status).toBe(200) // another identity
      await Bun.sleep(1050)
      expect((await anon()).status).toBe(200)
    } finally {
      await paced.stop()
    }
  })
})

test('the entry script refuses to start with NODE_ENV=production', () => {
  const root = join(import.meta.dir, '../..')
  const p = Bun.spawnSync([process.execPath, 'run', 'scripts/sim/run-marketplace-a.ts'], {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'production', PORT: '0' },
  })
  expect(p.exitCode).not.toBe(0)
  const err = p.stderr.toString().trim()
  expect(err.split('\n')).toHaveLength(1)
  expect(err).toContain('NODE_ENV=production')
  expect(p.stdout.toString()).toBe('')
})
