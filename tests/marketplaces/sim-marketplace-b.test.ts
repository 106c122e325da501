import { afterEach, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { request } from 'node:http'
import { type MarketplaceBSim, startMarketplaceB } from '../../scripts/sim/marketplace-b'

const KEY = 'owner-key-0123456789'
const RENTER = 'renter-key-9876543210'

const FULL = {
  name: 'rig-full',
  id: 41,
  connected: true,
  online: true,
  initialized: true,
  creation_completed: true,
  visibility: 'public' as const,
  pricing: { bitcoin: 0.0001, 'CLORE-Blockchain': 2000 },
  min_spot_pricing: { bitcoin: 0.00005 },
  mrl: 72,
  allowed_currencies: ['bitcoin', 'CLORE-Blockchain'],
  autoprice: { bitcoin: 'usd' as const },
  usd_pricing: { bitcoin: { on_demand: 6, spot: 3 } },
  reliability: 0.9871,
  rating: { avg: 4.8, cnt: 12 },
  cuda_version: '12.4',
  gpu_array: ['NVIDIA GeForce RTX 4090'],
  specs: { cpu: 'Intel Core i9-11900', ram: 64, gpu: '1x NVIDIA GeForce RTX 4090', gpuram: 24, backend_version: 17, net: { up: 25, down: 119, cc: 'CZ' } },
  background_job: { times_updated: 1, image: 'miner', command: 'run', env: {} },
  init_token: 'tok',
  rentals: [],
}

let sim: MarketplaceBSim | undefined
afterEach(async () => {
  await sim?.stop()
  sim = undefined
})

async function start(extra: Parameters<typeof startMarketplaceB>[0] = {}) {
  sim = await startMarketplaceB({
    requestIntervalMs: 0,
    owners: { [KEY]: { label: 'alice', userId: 7, servers: [FULL, { name: 'bare' }] }, [RENTER]: { label: 'bob', userId: 8 } },
    ...extra,
  })
  return sim
}

async function call(s: MarketplaceBSim, path: string, init: { key?: string | null; method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...init.headers }
  if (init.key !== null) headers.auth = init.key ?? KEY
  const res = await fetch(`${s.url}/v1${path}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  })
  return { status: res.status, body: (await res.json()) as any }
}

/** `server_config` is a GET with a JSON body, which fetch (and Bun's undici) refuse to send. */
function serverConfig(s: MarketplaceBSim, name: string, key = KEY): Promise<any> {
  const body = JSON.stringify({ server_name: name })
  const headers = { auth: key, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }
  return new Promise((resolve, reject) => {
    const req = request(`${s.url}/v1/server_config`, { method: 'GET', headers }, (res) => {
      let text = ''
      res.on('data', (c) => (text += c))
      res.on('end', () => resolve(JSON.parse(text)))
    })
    req.on('error', reject)
    req.end(body)
  })
}

describe('marketplace_b simulator: auth and codes', () => {
  test('a missing, unknown or Bearer key gets code 3 in the body; the HTTP status is configurable', async () => {
    const s = await start()
    for (const init of [{ key: null }, { key: 'nope' }, { key: null, headers: { authorization: `Bearer ${KEY}` } }]) {
      expect(await call(s, '/my_servers', init)).toEqual({ status: 200, body: { code: 3 } })
    }
    await s.stop()
    sim = await start({ httpStatusFor: { 3: 401 } })
    expect(await call(sim, '/my_servers', { key: 'nope' })).toEqual({ status: 401, body: { code: 3 } })
  })

  test('an unknown endpoint is code 4, a bad body code 2, and code 5 when a key goes faster than its interval', async () => {
    // A 1 s interval: wide enough that a loaded machine cannot space two calls past it by accident.
    const s = await start({ requestIntervalMs: 1000 })
    expect((await call(s, '/nothing')).body).toEqual({ code: 4 })
    await Bun.sleep(1050)
    expect((await call(s, '/set_server_settings', { method: 'POST', body: { name: 'ghost' } })).body).toEqual({ code: 2 })
    expect((await call(s, '/my_servers')).body).toEqual({ code: 5 })
    expect((await call(s, '/my_servers', { key: RENTER })).body.code).toBe(0)
    await Bun.sleep(1050)
    expect((await call(s, '/my_servers')).body.code).toBe(0)
  })
})

describe('marketplace_b simulator: reads', () => {
  test('my_servers carries every field that is set and omits every field that is not', async () => {
    const s = await start()
    const { body } = await call(s, '/my_servers')
    expect(body.code).toBe(0)
    expect(body.limit).toBe(16)
    const [full, bare] = body.servers
    expect(full).toEqual({
      name: 'rig-full',
      connected: true,
      visibility: 'public',
      pricing: FULL.pricing,
      online: true,
      min_spot_pricing: FULL.min_spot_pricing,
      allowed_currencies: FULL.allowed_currencies,
      init_token: 'tok',
      specs: FULL.specs,
    })
    expect(bare).toEqual({ name: 'bare' })
    s.updateServer(KEY, 'rig-full', { online: undefined, specs: undefined, extra: { partner: true } })
    const again = (await call(s, '/my_servers')).body.servers[0]
    expect('online' in again || 'specs' in again).toBe(false)
    expect(again.partner).toBe(true)
  })

  test('server_config maps spot_pricing, allowed_coins, rental_status; marketplace, wallets and poh_balance', async () => {
    const s = await start()
    const cfg = await serverConfig(s, 'rig-full')
    expect(cfg.code).toBe(0)
    expect(cfg.creation_completed).toBe(true)
    expect(cfg.config).toMatchObject({ id: 41, mrl: 72, spot_pricing: FULL.min_spot_pricing, allowed_coins: FULL.allowed_currencies, rental_status: 0 })
    expect(cfg.config.autoprice).toEqual({ bitcoin: 'usd' })
    expect(await serverConfig(s, 'bare')).toEqual({ config: { name: 'bare' }, code: 0 })
    expect((await serverConfig(s, 'ghost')).code).toBe(2)

    const market = (await call(s, '/marketplace')).body
    expect(market.my_servers).toEqual([41])
    expect(market.servers).toEqual([
      expect.objectContaining({ id: 41, owner: 7, rented: false, price: { on_demand: FULL.pricing, spot: FULL.min_spot_pricing }, reliability: 0.9871 }),
    ])
    expect(await call(s, '/wallets')).toEqual({ status: 200, body: { wallets: [], code: 0 } })
    expect((await call(s, '/poh_balance')).body).toEqual({ items: [], count: 0, code: 0 })
    const balance = {
      total: 250000,
      free_amount: 0,
      reward_amount: 10,
      offers: { rented_amount: 0, rented_on_marketplace_amount: 0, rented_finished_amount: 0, leased_amount: 0, leased_finished_amount: 0 },
    }
    s.updateOwner(KEY, { poh: { balance }, wallets: [{ name: 'bitcoin', balance: 0.0015 }] })
    expect((await call(s, '/poh_balance')).body.balance).toEqual(balance)
    expect((await call(s, '/wallets')).body.wallets).toEqual([{ name: 'bitcoin', balance: 0.0015 }])
  })

  test('rentals drive rental_status, rented, spot offers with rates, and the renter sees them in my_orders', async () => {
    const s = await start({ currencyRatesInUsd: { bitcoin: 60000, 'USD-Blockchain': 1 } })
    s.addRental(KEY, 'rig-full', { id: 900, spot: true, currency: 'bitcoin', price: 0.00006, renter: RENTER, ct: 1_700_000_000 })
    expect((await serverConfig(s, 'rig-full')).config.rental_status).toBe(1)
    expect((await call(s, '/marketplace')).body.servers[0].rented).toBe(true)
    const spot = (await call(s, '/spot_marketplace?market=41')).body
    expect(spot).toEqual({
      market: {
        currency_rates_in_usd: { bitcoin: 60000, 'USD-Blockchain': 1 },
        offers: [{ offer_id: 900, bid: 0.00006, active: true, my: false, currency: 'bitcoin' }],
        server: { min_pricing: FULL.min_spot_pricing, mrl: 72, online: true, visibility: 'public' },
      },
      exists: true,
      code: 0,
    })
    expect((await call(s, '/spot_marketplace?market=999')).body).toEqual({ exists: false, code: 0 })
    expect((await call(s, '/my_orders', { key: RENTER })).body.orders).toEqual([
      { id: 900, price: 0.00006, currency: 'bitcoin', ct: 1_700_000_000, si: 41, spot: true },
    ])
    s.updateRental(900, { expired: true })
    expect((await call(s, '/my_orders', { key: RENTER })).body.orders).toEqual([])
    expect((await call(s, '/my_orders?return_completed=true', { key: RENTER })).body.orders).toHaveLength(1)
    expect((await serverConfig(s, 'rig-full')).config.rental_status).toBe(0)
    s.removeRental(900)
    expect(s.server(KEY, 'rig-full')?.rentals).toEqual([])
  })

  test('an order expires once its length (mrl hours from ct) has passed on the simulator clock', async () => {
    let nowMs = 1_700_000_000_000
    const s = await start({ clock: () => nowMs })
    s.addRental(KEY, 'rig-full', { id: 901, currency: 'bitcoin', price: 0.0001, renter: RENTER, ct: 1_700_000_000, mrl: 2 })
    expect((await serverConfig(s, 'rig-full')).config.rental_status).toBe(1)
    nowMs += 2 * 3600 * 1000 - 1000
    expect((await serverConfig(s, 'rig-full')).config.rental_status).toBe(1)
    nowMs += 1000
    expect((await serverConfig(s, 'rig-full')).config.rental_status).toBe(0)
    expect((await call(s, '/my_orders?return_completed=true', { key: RENTER })).body.orders).toEqual([
      { id: 901, price: 0.0001, currency: 'bitcoin', mrl: 2, ct: 1_700_000_000, si: 41, expired: true },
    ])
  })
})

describe('marketplace_b simulator: writes', () => {
  test('set_server_settings (both forms) shows up in the reads; invalid input changes nothing', async () => {
    const s = await start()
    const post = (body: unknown) => call(s, '/set_server_settings', { method: 'POST', body })
    expect((await post({ name: 'bare', availability: true, mrl: 96, on_demand: 0.0002, spot: 0.0001 })).body).toEqual({ code: 0 })
    const body = {
      name: 'bare',
      'CLORE-Blockchain_on_demand': 3000,
      'CLORE-Blockchain_spot': 1500,
      'enabled-CLORE-Blockchain': true,
      'enabled-bitcoin': false,
      autoprice: { 'CLORE-Blockchain': false },
      usd_pricing: { 'USD-Blockchain': { on_demand: 7, spot: 4 } },
    }
    expect((await post(body)).body).toEqual({ code: 0 })
    expect((await call(s, '/my_servers')).body.servers[1]).toEqual({
      name: 'bare',
      visibility: 'public',
      pricing: { bitcoin: 0.0002, 'CLORE-Blockchain': 3000 },
      min_spot_pricing: { bitcoin: 0.0001, 'CLORE-Blockchain': 1500 },
      allowed_currencies: ['CLORE-Blockchain'],
    })
    expect((await serverConfig(s, 'bare')).config).toMatchObject({ mrl: 96, usd_pricing: { 'USD-Blockchain': { on_demand: 7, spot: 4 } } })
    for (const bad of [
      { name: 'bare', mrl: -1 },
      { name: 'bare', availability: false, typo_on_demand: 1 },
      { name: 'bare', DOGE_spot: 1 },
    ]) {
      expect((await post(bad)).body).toEqual({ code: 2 })
    }
    expect(s.server(KEY, 'bare')?.visibility).toBe('public')
  })

  test('every field of set_server_settings shows in my_servers, server_config, marketplace and spot_marketplace', async () => {
    const s = await start()
    s.updateServer(KEY, 'bare', { id: 42 })
    const post = (body: unknown) => call(s, '/set_server_settings', { method: 'POST', body })
    const spot = async () => (await call(s, '/spot_marketplace?market=42')).body.market.server
    const listed = async () => (await call(s, '/marketplace')).body.servers.find((x: any) => x.id === 42)
    expect(await listed()).toBeUndefined() // no visibility yet: not public
    const full = {
      name: 'bare',
      availability: true,
      mrl: 240,
      bitcoin_on_demand: 0.00012,
      bitcoin_spot: 0.00006,
      'CLORE-Blockchain_on_demand': 2500,
      'CLORE-Blockchain_spot': 1200,
      'USD-Blockchain_on_demand': 7.5,
      'USD-Blockchain_spot': 3.5,
      'enabled-bitcoin': true,
      'enabled-CLORE-Blockchain': true,
      'enabled-USD-Blockchain': true,
      autoprice: { bitcoin: 'usd', 'CLORE-Blockchain': false, 'USD-Blockchain': 'usd' },
      usd_pricing: { bitcoin: { on_demand: 7, spot: 3.5 }, 'USD-Blockchain': { on_demand: 7.5, spot: 3.5 } },
    }
    expect((await post(full)).body).toEqual({ code: 0 })
    const pricing = { bitcoin: 0.00012, 'CLORE-Blockchain': 2500, 'USD-Blockchain': 7.5 }
    const spotPricing = { bitcoin: 0.00006, 'CLORE-Blockchain': 1200, 'USD-Blockchain': 3.5 }
    const coins = ['bitcoin', 'CLORE-Blockchain', 'USD-Blockchain']
    expect((await call(s, '/my_servers')).body.servers[1]).toEqual({
      name: 'bare',
      visibility: 'public',
      pricing,
      min_spot_pricing: spotPricing,
      allowed_currencies: coins,
    })
    expect(await serverConfig(s, 'bare')).toEqual({
      config: {
        name: 'bare',
        visibility: 'public',
        pricing,
        spot_pricing: spotPricing,
        mrl: 240,
        id: 42,
        allowed_coins: coins,
        autoprice: full.autoprice,
        usd_pricing: full.usd_pricing,
      },
      code: 0,
    })
    expect(await listed()).toEqual({ id: 42, owner: 7, mrl: 240, price: { on_demand: pricing, spot: spotPricing }, allowed_coins: coins })
    expect(await spot()).toEqual({ min_pricing: spotPricing, mrl: 240, visibility: 'public' })

    // Unlisting, a coin switched off, a peg dropped and the old BTC form change only what they name.
    expect((await post({ name: 'bare', availability: false, 'enabled-USD-Blockchain': false, autoprice: { 'USD-Blockchain': false } })).body).toEqual({
      code: 0,
    })
    expect(await listed()).toBeUndefined()
    expect(await spot()).toEqual({ min_pricing: spotPricing, mrl: 240, visibility: 'hidden' })
    expect((await serverConfig(s, 'bare')).config).toMatchObject({
      visibility: 'hidden',
      allowed_coins: ['bitcoin', 'CLORE-Blockchain'],
      autoprice: { bitcoin: 'usd', 'CLORE-Blockchain': false, 'USD-Blockchain': false },
    })
    expect((await post({ name: 'bare', availability: true, mrl: 48, on_demand: 0.0002, spot: 0.0001 })).body).toEqual({ code: 0 })
    expect(await listed()).toMatchObject({
      mrl: 48,
      price: { on_demand: { ...pricing, bitcoin: 0.0002 }, spot: { ...spotPricing, bitcoin: 0.0001 } },
      allowed_coins: ['bitcoin', 'CLORE-Blockchain'],
    })
    expect(await spot()).toEqual({ min_pricing: { ...spotPricing, bitcoin: 0.0001 }, mrl: 48, visibility: 'public' })
  })

  test("other hosts' public servers (another owner) show in marketplace with their prices, not in my_servers", async () => {
    const s = await start()
    s.addOwner('market-key-0123456789', {
      label: 'market',
      userId: 99,
      servers: [
        { name: 'm1', id: 501, visibility: 'public', mrl: 100, pricing: { bitcoin: 0.00009 }, min_spot_pricing: { bitcoin: 0.00004 }, rentals: [] },
        { name: 'm2', id: 502, visibility: 'hidden', pricing: { bitcoin: 0.00001 } },
        { name: 'm3', visibility: 'public', pricing: { bitcoin: 0.00001 } },
      ],
    })
    const market = (await call(s, '/marketplace')).body
    expect(market.my_servers).toEqual([41])
    expect(market.servers.map((x: any) => x.id)).toEqual([41, 501])
    expect(market.servers[1]).toEqual({ id: 501, owner: 99, mrl: 100, price: { on_demand: { bitcoin: 0.00009 }, spot: { bitcoin: 0.00004 } }, rented: false })
    expect((await call(s, '/my_servers')).body.servers.map((x: any) => x.name)).toEqual(['rig-full', 'bare'])
    expect((await call(s, '/spot_marketplace?market=501')).body.market.server).toEqual({ min_pricing: { bitcoin: 0.00004 }, mrl: 100, visibility: 'public' })
  })

  test('set_spot_price enforces the lowering step and interval; cancel_order ends the order', async () => {
    const s = await start({ spotLowerIntervalMs: 200, spotMaxLowerStep: { bitcoin: 0.000001 } })
    s.addRental(KEY, 'rig-full', { id: 5, spot: true, currency: 'bitcoin', price: 0.00006, renter: RENTER })
    const setPrice = (desired_price: number) => call(s, '/set_spot_price', { key: RENTER, method: 'POST', body: { order_id: 5, desired_price } })
    expect((await setPrice(0.00005)).body).toEqual({ code: 6, error: 'exceeded_max_step', max_step: 0.000001 })
    expect((await setPrice(0.0000595)).body).toEqual({ code: 0 })
    expect((await setPrice(0.000059)).body).toMatchObject({ code: 6, error: 'can_lower_every_600_seconds' })
    expect((await setPrice(0.00007)).body).toEqual({ code: 0 })
    expect((await call(s, '/set_spot_price', { method: 'POST', body: { order_id: 5, desired_price: 1 } })).body).toEqual({ code: 2 })
    expect((await call(s, '/cancel_order', { key: RENTER, method: 'POST', body: { id: 5 } })).body).toEqual({ code: 0 })
    expect(s.server(KEY, 'rig-full')?.rentals?.[0]).toMatchObject({ price: 0.00007, expired: true })
  })
})

describe('marketplace_b simulator: switches and the request log', () => {
  test('5xx answers 500 with a code, slow delays, unreachable refuses connections and recovers', async () => {
    const s = await start({ slowMs: 120 })
    await s.setMode('5xx')
    const failed = await call(s, '/my_servers')
    expect(failed.status).toBe(500)
    expect(typeof failed.body.code).toBe('number')
    await s.setMode('slow')
    const t0 = performance.now()
    expect((await call(s, '/my_servers')).body.code).toBe(0)
    expect(performance.now() - t0).toBeGreaterThanOrEqual(100)
    await s.setMode('unreachable')
    await expect(call(s, '/my_servers')).rejects.toThrow()
    await s.setMode('ok')
    expect((await call(s, '/my_servers')).body.code).toBe(0)
  })

  test('the log records method, path, key label or hash, status, code and time, never the raw key', async () => {
    const s = await start({ requestIntervalMs: 1000 })
    await call(s, '/my_servers')
    await call(s, '/my_servers')
    await call(s, '/wallets', { key: 'stranger-key-abcdef' })
    await call(s, '/wallets', { key: null })
    const log = s.requests
    expect(log.map((r) => [r.method, r.path, r.status, r.code])).toEqual([
      ['GET', '/v1/my_servers', 200, 0],
      ['GET', '/v1/my_servers', 200, 5],
      ['GET', '/v1/wallets', 200, 3],
      ['GET', '/v1/wallets', 200, 3],
    ])
    expect(log[0].key).toBe('alice')
    expect(log[2].key).toMatch(/^sha256:[0-9a-f]{12}$/)
    expect(log[3].key).toBeNull()
    expect(log[1].at).toBeGreaterThanOrEqual(log[0].at)
    expect(JSON.stringify(log)).not.toContain('stranger-key')
    expect(JSON.stringify(log)).not.toContain(KEY)
    expect(log.map((r) => r.body)).toEqual([null, null, null, null])
    s.clearRequests()
    expect(s.requests).toHaveLength(0)
  })

  test('the log keeps the exact body of POSTs and of the server_config GET; api_key fields and the caller key are redacted', async () => {
    const s = await start()
    const settings = { name: 'bare', availability: true, mrl: 96, 'CLORE-Blockchain_on_demand': 3000, usd_pricing: { bitcoin: { on_demand: 6, spot: 3 } } }
    await call(s, '/set_server_settings', { method: 'POST', body: settings })
    await serverConfig(s, 'rig-full')
    await call(s, '/my_servers')
    await call(s, '/set_server_settings', { method: 'POST', body: { name: 'bare', api_key: 'leaked-secret', nested: [{ api_key: KEY }], note: `auth ${KEY}` } })
    const raw = await fetch(`${s.url}/v1/set_server_settings`, { method: 'POST', headers: { auth: KEY }, body: `name=bare&api_key=${RENTER}` })
    expect(((await raw.json()) as any).code).toBe(2)
    await serverConfig(s, 'rig-full', 'stranger-key-abcdef') // refused (code 3): its body is logged too
    expect(s.requests.map((r) => [r.method, r.path, r.code, r.body])).toEqual([
      ['POST', '/v1/set_server_settings', 0, settings],
      ['GET', '/v1/server_config', 0, { server_name: 'rig-full' }],
      ['GET', '/v1/my_servers', 0, null],
      ['POST', '/v1/set_server_settings', 2, { name: 'bare', api_key: '[redacted]', nested: [{ api_key: '[redacted]' }], note: 'auth [redacted]' }],
      ['POST', '/v1/set_server_settings', 2, 'name=bare&api_key=[redacted]'],
      ['GET', '/v1/server_config', 3, { server_name: 'rig-full' }],
    ])
    const text = JSON.stringify(s.requests)
    for (const secret of [KEY, RENTER, 'leaked-secret', 'stranger-key']) expect(text).not.toContain(secret)
  })
})

test('the entry script refuses to start in production, with one line', async () => {
  const proc = Bun.spawn([process.execPath, 'run', join(import.meta.dir, '../../scripts/sim/run-marketplace-b.ts')], {
    env: { ...process.env, NODE_ENV: 'production', PORT: '0' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  expect(await proc.exited).toBe(1)
  expect(await new Response(proc.stdout).text()).toBe('')
  expect((await new Response(proc.stderr).text()).trim().split('\n')).toEqual(['sim:marketplace-b refuses to start: NODE_ENV is production'])
})
