import { afterEach, describe, expect, test } from 'bun:test'
import { type MarketplaceBSim, startMarketplaceB } from '../../scripts/sim/marketplace-b'
import { createMarketplaceBAdapter } from '../../src/modules/marketplaces/adapters/marketplace-b/marketplace-b.adapter'
import { type MarketplaceCall, MarketplaceError } from '../../src/modules/marketplaces/adapters/marketplaces.adapter'
import { cloreFullServer, NULL_REMOTE } from '../support/marketplaces'

const KEY = 'clore-owner-key-5f2e9a17c3'
const OTHER = 'clore-renter-key-0b8d44e6a1'

const FULL = cloreFullServer(KEY, OTHER)
const RATES = { bitcoin: 60000, 'CLORE-Blockchain': 0.0025, 'USD-Blockchain': 1 }

let sim: MarketplaceBSim | undefined
afterEach(async () => {
  await sim?.stop()
  sim = undefined
})

async function start(extra: Parameters<typeof startMarketplaceB>[0] = {}) {
  sim = await startMarketplaceB({
    requestIntervalMs: 0,
    currencyRatesInUsd: RATES,
    owners: {
      [KEY]: {
        label: 'alice',
        userId: 7,
        servers: [FULL, { name: 'bare' }],
        poh: {
          balance: {
            total: 400000,
            free_amount: 0,
            reward_amount: 0,
            offers: { rented_amount: 0, rented_on_marketplace_amount: 0, rented_finished_amount: 0, leased_amount: 0, leased_finished_amount: 0 },
          },
        },
      },
      [OTHER]: { label: 'bob', userId: 8, wallets: [{ name: 'bitcoin', deposit: 'tb1qbobaddress', balance: 0 }] },
    },
    ...extra,
  })
  return sim
}

function adapter(s: MarketplaceBSim, extra: Partial<Parameters<typeof createMarketplaceBAdapter>[0]> = {}) {
  const calls: MarketplaceCall[] = []
  const a = createMarketplaceBAdapter({ baseUrl: s.url, nowUs: () => Date.now() * 1000, paceScale: 0.001, onCall: (c) => calls.push(c), ...extra })
  return { a, calls }
}

async function failureOf(p: Promise<unknown>): Promise<MarketplaceError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  )
  expect(e).toBeInstanceOf(MarketplaceError)
  return e as MarketplaceError
}

describe('marketplace_b adapter: mapping', () => {
  test('a server that sets every field maps each one to remote, marketplace_b and the candidate facts', async () => {
    const { a } = adapter(await start())
    const [full] = await a.listMachines(KEY)
    expect(full!.externalMachineId).toBe('41')
    expect(full!.remote).toEqual({
      ...NULL_REMOTE,
      listed: true,
      hostname: 'rig-full',
      reliability: 0.9871234,
      rentals_running: 1,
      gpu_name: 'NVIDIA GeForce RTX 4090',
      gpu_count: 2,
      gpu_model: 'rtx_4090',
      gpu_lanes: 16,
      inet_up_mbps: 25.24,
      inet_down_mbps: 119.61,
      cuda_version: '12.4',
      driver_version: '550.54.14',
      gpu_total_ram_mb: 49152,
      cpu_ram_mb: 65536,
      cpu_cores: 16,
      rentals: [{ kind: 'spot', currency: 'CLORE-Blockchain', price_day: '1500', gpu_count: null, ends_at: null }],
    })
    expect(full!.marketplaceB).toEqual({
      max_rental_hours: 72,
      partial_rental: true,
      vpn: false,
      partner: true,
      overclock: true,
      update_channel: 'stable',
      backend_version: 17,
      target_backend_version: 18,
      driver_status: 'ok',
      driver_version: '550.54.14',
      kernel: '6.5.0-generic',
      max_fair_price_day: 12.5,
      coins: ['bitcoin', 'CLORE-Blockchain'],
      fixed_coins: ['CLORE-Blockchain'],
      coin_prices: {
        bitcoin: { on_demand: '0.00010337', spot: '0.00005168' },
        'CLORE-Blockchain': { on_demand: '2000', spot: null },
      },
      spot: {
        bids: [
          { offer_id: 900, bid: '0.00004', currency: 'bitcoin', active: false, mine: false },
          { offer_id: 77, bid: '1500', currency: 'CLORE-Blockchain', active: true, mine: true },
        ],
        rates_usd_per_coin: { bitcoin: '60000.00', 'CLORE-Blockchain': '0.0025', 'USD-Blockchain': '1.00' },
        // 0.00004 BTC × 60000 = 2.40 USD; 1500 CLORE × 0.0025 = 3.75 USD, the best.
        best_bid_usd: '3.75',
      },
    })
    expect(full!.facts).toEqual({ hostname: 'rig-full', public_ip: '203.0.113.7', gpu_model: 'rtx_4090', gpu_count: 2, disk_gb: 512, port_range_size: null })
  })

  test('a server that sets nothing maps to nulls (never zero), keyed by its name', async () => {
    const { a } = adapter(await start())
    const bare = (await a.listMachines(KEY)).find((m) => m.remote.hostname === 'bare')!
    expect(bare.externalMachineId).toBe('bare')
    expect(bare.remote).toEqual({ ...NULL_REMOTE, hostname: 'bare' })
    expect(Object.values(bare.marketplaceB!).every((v) => v === null)).toBe(true)
    expect(bare.facts).toEqual({ hostname: 'bare', public_ip: null, gpu_model: null, gpu_count: null, disk_gb: null, port_range_size: null })
  })

  test('rentals: one entry per running order, spot with its coin and bid, an on-demand order with unknown terms, none when idle', async () => {
    const s = await start()
    s.putServer(KEY, { name: 'od', id: 50, visibility: 'hidden', rentals: [{ id: 81, currency: 'bitcoin', price: 0.0001 }] })
    s.putServer(KEY, { name: 'idle', id: 51, visibility: 'public', rentals: [{ id: 82, spot: true, currency: 'bitcoin', price: 0.00003, expired: true }] })
    s.putServer(KEY, {
      name: 'two-spot',
      id: 52,
      rentals: [{ id: 83, spot: true, currency: 'bitcoin', price: 0.00003 }],
      spot_offers: [{ offer_id: 84, bid: 10, active: true, currency: 'USD-Blockchain' }],
    })
    const { a } = adapter(s)
    const by = new Map((await a.listMachines(KEY)).map((m) => [m.remote.hostname, m.remote]))
    expect(by.get('od')!.rentals).toEqual([{ kind: 'on_demand', currency: null, price_day: null, gpu_count: null, ends_at: null }])
    expect(by.get('od')!.rentals_running).toBe(1)
    expect(by.get('od')!.listed).toBe(false)
    expect(by.get('idle')!.rentals).toEqual([])
    expect(by.get('idle')!.rentals_running).toBe(0)
    expect(by.get('two-spot')!.rentals).toEqual([
      { kind: 'spot', currency: 'USD-Blockchain', price_day: '10', gpu_count: null, ends_at: null },
      { kind: 'spot', currency: 'bitcoin', price_day: '0.00003', gpu_count: null, ends_at: null },
    ])
  })
})

describe('marketplace_b adapter: the key', () => {
  test('verifyKey names the owner by Clore user id and values the PoH holding in USD', async () => {
    const s = await start()
    const { a, calls } = adapter(s)
    // 400000 CLORE × 0.0025 USD = 1000 USD
    expect(await a.verifyKey(KEY)).toEqual({ owner: 'user 7', holdingUsd: '1000.00' })
    expect(calls[0]).toMatchObject({ operation: 'account.verify', path: '/v1/my_servers', status: 200, outcome: 'ok' })
  })

  test('an owner with no public server is named by wallet, and an unread holding is null', async () => {
    const { a } = adapter(await start())
    expect(await a.verifyKey(OTHER)).toEqual({ owner: 'wallet tb1qbobaddress', holdingUsd: null })
  })

  test('a rejected key (code 3, whatever the HTTP status) is rejected_key; unreachable, 5xx, slow and non-JSON are unavailable', async () => {
    for (const httpStatusFor of [{}, { 3: 401 }]) {
      const s = await start({ httpStatusFor })
      const { a, calls } = adapter(s)
      const e = await failureOf(a.verifyKey('not-a-real-key-zz'))
      expect(e.failure).toBe('rejected_key')
      expect(calls.map((c) => c.outcome)).toEqual(['rejected_key'])
      await s.stop()
    }
    const s = await start({ slowMs: 400 })
    const { a } = adapter(s, { timeoutMs: 100 })
    const seen: Record<string, MarketplaceError> = {}
    for (const mode of ['5xx', 'slow', 'unreachable'] as const) {
      await s.setMode(mode)
      seen[mode] = await failureOf(a.listMachines(KEY))
    }
    for (const e of Object.values(seen)) {
      expect(e.failure).toBe('unavailable')
      expect(e.retryAfterSeconds).toBeGreaterThan(0)
      expect(e.message).not.toContain(KEY)
    }
    const html = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('<html>bad gateway</html>', { status: 200 }) })
    const e = await failureOf(createMarketplaceBAdapter({ baseUrl: `http://127.0.0.1:${html.port}`, nowUs: () => 0 }).verifyKey(KEY))
    await html.stop(true)
    expect(e.failure).toBe('unavailable')
  })

  test('the key appears in no error message, request log or call record', async () => {
    const s = await start()
    const { a, calls } = adapter(s)
    await a.listMachines(KEY)
    await a.verifyKey(KEY)
    await s.setMode('5xx')
    const e = await failureOf(a.verifyKey(KEY))
    expect(`${e.message} ${e.stack}`).not.toContain(KEY)
    expect(JSON.stringify(s.requests)).not.toContain(KEY)
    expect(s.requests.every((r) => r.key === 'alice')).toBe(true)
    expect(calls.length).toBeGreaterThan(5)
    expect(JSON.stringify(calls)).not.toContain(KEY)
  })
})

describe('marketplace_b adapter: pacing and rate limits', () => {
  test('calls of one key are spaced by the pacer, so the simulator never says code 5', async () => {
    const s = await start({ requestIntervalMs: 60 })
    // paceScale 0.2 → 1.8 s becomes 360 ms between the starts of calls. The simulator sees arrivals,
    // which a loaded machine can bunch by a stall of the previous send: 300 ms of margin over its
    // 60 ms limit keeps that from deciding the test.
    const { a } = adapter(s, { paceScale: 0.2 })
    await a.listMachines(KEY)
    const log = s.requests
    expect(log.map((r) => r.path)).toEqual(['/v1/my_servers', '/v1/server_config', '/v1/server_config', '/v1/marketplace', '/v1/spot_marketplace?market=41'])
    expect(log.every((r) => r.code === 0)).toBe(true)
    for (let i = 1; i < log.length; i++) expect(log[i]!.at - log[i - 1]!.at).toBeGreaterThanOrEqual(60)
  })

  test('code 5 is retried with growing backoff up to the retries, then unavailable with a hint', async () => {
    const s = await start({ requestIntervalMs: 5000 })
    const { a, calls } = adapter(s, { paceScale: 0.02 })
    await a.listMachines(OTHER) // one allowed call, then the key is over its limit
    s.clearRequests()
    calls.splice(0)
    const e = await failureOf(a.verifyKey(OTHER))
    expect(e.failure).toBe('unavailable')
    expect(e.retryAfterSeconds).toBeGreaterThan(0)
    const log = s.requests
    expect(log.map((r) => r.code)).toEqual([5, 5, 5, 5])
    // Backoff 2, 4, 8 × 1.8 s, scaled by 0.02: 72, 144, 288 ms.
    const gaps = log.slice(1).map((r, i) => r.at - log[i]!.at)
    expect(gaps[0]).toBeGreaterThanOrEqual(68)
    expect(gaps[1]).toBeGreaterThanOrEqual(140)
    expect(gaps[2]).toBeGreaterThanOrEqual(284)
    expect(calls.map((c) => c.outcome)).toEqual(['retried', 'retried', 'retried', 'unavailable'])
  })

  test('HTTP 429 is a rate limit too, and a retry that gets through succeeds', async () => {
    // A 1 s limit against 360 ms pacing: the second call is refused (429) however loaded the machine
    // is, and the first backoff (2 × 360 ms) takes it past the limit.
    const s = await start({ requestIntervalMs: 1000, httpStatusFor: { 5: 429 } })
    const { a, calls } = adapter(s, { paceScale: 0.2 })
    await a.listMachines(OTHER)
    await a.listMachines(OTHER)
    expect(s.requests.map((r) => r.status)).toContain(429)
    expect(calls.at(-1)!.outcome).toBe('ok')
  })
})
