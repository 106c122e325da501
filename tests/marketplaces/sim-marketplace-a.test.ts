import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { type MarketplaceASim, startMarketplaceA } from '../../scripts/sim/marketplace-a'

/**
 * The Vast.ai host-API simulator over real HTTP: auth (header and legacy query), every error
 * outcome, pacing with a plain-text 429 and no Retry-After, the bare-list machine read, absent
 * fields, the switches, and a request log that never holds a key.
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
      { method: 'GET', path: '/api/v0/machines/', query: 'owner=me', endpoint: 'machines', identity: 'owner-one', status: 200 },
      { method: 'GET', path: '/api/v0/users/current/', query: '', endpoint: 'user', identity: expect.stringMatching(/^sha256:[0-9a-f]{12}$/), status: 401 },
      { method: 'GET', path: '/api/v0/users/current/', query: '', endpoint: 'user', identity: 'anonymous', status: 403 },
    ])
    expect(log.every((e) => Math.abs(Date.now() - e.time) < 10_000)).toBe(true)
    const text = JSON.stringify(log)
    for (const key of ALL_KEYS) expect(text).not.toContain(key)
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
