import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { vastMarketOffer } from '../support/marketplaces'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { call, type Caller, insertServers, type Member, mintPat, newTenant, setPlan } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { expectProblem } from '../support/problem'

/**
 * Market data against both simulators over real HTTP, with a market whose every number the test
 * chose: after a marketplaces.sync run, GET /marketplaces/stats (public, no credentials, cached 60 s)
 * answers exactly the hand-computed count, GPUs, min, p25, median, p75 and max per marketplace and
 * model (Vast's dph_base ÷ num_gpus; Clore's per-day price of the first coin among USD-Blockchain,
 * bitcoin and CLORE-Blockchain × its rate ÷ 24 ÷ cards), leaving out non-rentable, rented, hidden and
 * unpriceable offers; its filters work and the 61st request in a minute from one address is 429 with
 * Retry-After. The tenant's listed links show their price beside their model's summary (/prices),
 * their hand-computed cheaper/equal/dearer/percentile (/prices/standing) and their share of the
 * market's GPUs (/supply), cut down to an allowlisted token's servers; /prices/movement compares the
 * latest snapshot with the one `days` back (null when none is that old, and for a model new since).
 * A market is read at most once per 55 minutes. The four tenant views answer 401 without
 * credentials and 403 to a token without marketplaces:read. Two defects these tests found (an
 * unfiltered request answered for marketplace_a only; a marketplace_b link priced with a rounded rate
 * while its market used the exact one) are fixed and stay tested at the end.
 */

const KEY_A = 'vast-market-key-0123456789abcdef'
const KEY_B = 'clore-market-key-5f2e9a17c3'
const MARKET_B = 'clore-market-hosts-key-8d1c3b'
const VAST_OWNER = 4343
const DAY_S = 86400
/** The address the rate-limit test spends its minute from (X-Forwarded-For behind the trusted loopback proxy). */
const BUSY_IP = '198.51.100.61'

type Summary = { offers: number; gpus: number; min: string; p25: string; median: string; p75: string; max: string }
type TakenAt = { marketplace_a: string | null; marketplace_b: string | null }
type StatsItem = Summary & { marketplace: string; gpu_model: string; taken_at: string }
type Stats = { taken_at: TakenAt; items: StatsItem[] }
type MovementItem = {
  marketplace: string
  gpu_model: string
  from: (Summary & { taken_at: string }) | null
  to: Summary & { taken_at: string }
  median_change: string | null
  median_change_percent: number | null
}
type Movement = { days: number; items: MovementItem[] }
/** One item of /prices or /prices/standing. */
type Row = { server_id: string; [field: string]: unknown }

const flat = (offers: number, gpus: number, price: string): Summary => ({ offers, gpus, min: price, p25: price, median: price, p75: price, max: price })

/*
 * marketplace_a (Vast), USD per GPU-hour = dph_base ÷ num_gpus. RTX 4090: the tenant's machine 701
 * at 0.50 on 2 GPUs plus 0.30 (1), 0.35 (3), 0.40 (4), 0.50 (2), 0.60 (8); the non-rentable 0.10
 * offer is left out. Sorted [0.30, 0.35, 0.40, 0.50, 0.50, 0.60], n = 6: p25 at rank 1.25 = 0.35 +
 * 0.05 × 0.25 = 0.3625, the median at 2.5 = 0.45, p75 at 3.75 = 0.50; 20 GPUs. A100: 1.000001 and
 * 2.000004 ÷ 2 = 1.000002: p25 1.00000125 → 1.000001, the median 1.0000015 → 1.000002 (half up),
 * p75 1.00000175 → 1.000002. RTX 3090: 0.50 ÷ 3 = 0.1666…67 → 0.166667.
 */
const A_4090: Summary = { offers: 6, gpus: 20, min: '0.30', p25: '0.3625', median: '0.45', p75: '0.50', max: '0.60' }
const A_A100: Summary = { offers: 2, gpus: 3, min: '1.000001', p25: '1.000001', median: '1.000002', p75: '1.000002', max: '1.000002' }
const A_3090 = flat(1, 3, '0.166667')
/*
 * marketplace_b (Clore), rates bitcoin 60000 and CLORE 0.0025 USD. RTX 4090: the tenant's server 41
 * at 26.4 USD-Blockchain/day on 2 cards = 0.55; m1 0.0001 BTC/day = 6 USD ÷ 24 = 0.25; m2 48 USD ÷ 24
 * ÷ 4 = 0.50; m3 40 USD-Blockchain (taken before its bitcoin price) ÷ 24 ÷ 2 = 0.833333; m4 240 CLORE
 * = 0.60 USD ÷ 24 = 0.025; m5 0.00036 BTC = 21.60 USD ÷ 24 ÷ 3 = 0.30; the rented m6, the hidden m7
 * and the litecoin-only m8 are left out. Sorted [0.025, 0.25, 0.30, 0.50, 0.55, 0.833333]: p25 =
 * 0.25 + 0.05 × 0.25 = 0.2625, the median 0.40, p75 = 0.50 + 0.05 × 0.75 = 0.5375; 13 GPUs. RTX 3090:
 * the tenant's server 42 at 4800 CLORE = 12 USD ÷ 24 = 0.50. A100: m9 0.0004 BTC = 24 USD ÷ 24 = 1.00.
 */
const B_4090: Summary = { offers: 6, gpus: 13, min: '0.025', p25: '0.2625', median: '0.40', p75: '0.5375', max: '0.833333' }
const B_3090 = flat(1, 1, '0.50')
const B_A100 = flat(1, 1, '1.00')

/*
 * After the prices change: Vast's 0.40 becomes 0.48 and 0.60 becomes 0.90, the RTX 3090 offer goes
 * and an H100 at 2.50 comes: sorted [0.30, 0.35, 0.48, 0.50, 0.50, 0.90], p25 = 0.35 + 0.13 × 0.25 =
 * 0.3825, the median 0.49 (+0.04, +8.9 %). Clore's m3 becomes 9.6 USD ÷ 24 ÷ 2 = 0.20 and m5 0.000396
 * BTC = 23.76 USD ÷ 24 ÷ 3 = 0.33: sorted [0.025, 0.20, 0.25, 0.33, 0.50, 0.55], p25 = 0.20 + 0.05 ×
 * 0.25 = 0.2125, the median 0.29 (−0.11, −27.5 %), p75 = 0.33 + 0.17 × 0.75 = 0.4575.
 */
const A_4090_LATER: Summary = { offers: 6, gpus: 20, min: '0.30', p25: '0.3825', median: '0.49', p75: '0.50', max: '0.90' }
const A_H100 = flat(1, 1, '2.50')
const B_4090_LATER: Summary = { offers: 6, gpus: 13, min: '0.025', p25: '0.2125', median: '0.29', p75: '0.4575', max: '0.55' }

const vast = vastMarketOffer
const MARKET_A = [
  vast(9001, 'RTX 4090', 1, 0.3),
  vast(9002, 'RTX 4090', 3, 1.05),
  vast(9003, 'RTX 4090', 4, 1.6),
  vast(9004, 'RTX 4090', 2, 1.0),
  vast(9005, 'RTX 4090', 8, 4.8),
  vast(9006, 'RTX 4090', 2, 0.2, false),
  vast(9007, 'A100', 1, 1.000001),
  vast(9008, 'A100', 2, 2.000004),
  vast(9009, 'RTX 3090', 3, 0.5),
]
const MARKET_A_LATER = [
  ...MARKET_A.filter((o) => o.id !== 9003 && o.id !== 9005 && o.id !== 9009),
  vast(9003, 'RTX 4090', 4, 1.92),
  vast(9005, 'RTX 4090', 8, 7.2),
  vast(9010, 'H100', 1, 2.5),
]

const rtx4090 = (n: number) => ({ gpu: `${n}x NVIDIA GeForce RTX 4090` })
const cloreServer = (name: string, id: number, pricing: Record<string, number>, specs: { gpu: string }, more: Record<string, unknown> = {}) => ({
  name,
  id,
  visibility: 'public' as const,
  pricing,
  specs,
  ...more,
})

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Member
/** Linked to Vast 701 (listed, 0.50 on 2 RTX 4090). */
let s1: string
/** Linked to Vast 702 (not listed): in no view. */
let s2: string
/** Linked to Vast 703 (listed, RTX 5090, no price): a model the market does not have. */
let s3: string
/** Linked to Clore 41 (public, 2 RTX 4090 at 26.4 USD-Blockchain a day). */
let s4: string
/** Linked to Clore 42 (public, 1 RTX 3090 at 4800 CLORE a day). */
let s5: string
/** When the first sync ran (service microseconds): the first snapshot was taken in between. */
let firstSync: { from: number; to: number }

beforeAll(async () => {
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: VAST_OWNER, email: 'market-host@example.com', keys: [{ key: KEY_A, label: 'market' }] }] })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    currencyRatesInUsd: { bitcoin: 60000, 'CLORE-Blockchain': 0.0025, 'USD-Blockchain': 1 },
    owners: {
      [KEY_B]: {
        label: 'tenant',
        userId: 7,
        servers: [
          cloreServer('own-4090', 41, { 'USD-Blockchain': 26.4 }, rtx4090(2)),
          cloreServer('own-3090', 42, { 'CLORE-Blockchain': 4800 }, { gpu: '1x NVIDIA GeForce RTX 3090' }),
        ],
      },
      [MARKET_B]: {
        label: 'market',
        userId: 99,
        servers: [
          cloreServer('m1', 501, { bitcoin: 0.0001 }, rtx4090(1)),
          cloreServer('m2', 502, { 'USD-Blockchain': 48 }, rtx4090(4)),
          cloreServer('m3', 503, { bitcoin: 0.0002, 'USD-Blockchain': 40 }, rtx4090(2)),
          cloreServer('m4', 504, { 'CLORE-Blockchain': 240 }, rtx4090(1)),
          cloreServer('m5', 505, { bitcoin: 0.00036 }, rtx4090(3), { rentals: [] }),
          cloreServer('m6', 506, { bitcoin: 0.0001 }, rtx4090(1), { rentals: [{ id: 7001, currency: 'bitcoin', price: 0.0001 }] }),
          cloreServer('m7', 507, { bitcoin: 0.0001 }, rtx4090(1), { visibility: 'hidden' }),
          cloreServer('m8', 508, { litecoin: 1 }, rtx4090(1)),
          cloreServer('m9', 509, { bitcoin: 0.0004 }, { gpu: '1x NVIDIA A100' }),
        ],
      },
    },
  })
  app = await startTestApp({
    MARKETPLACE_A_API_URL: simA.url,
    MARKETPLACE_B_API_URL: simB.url,
    // The rate-limit test picks its own address; every other request comes from the loopback peer.
    TRUSTED_PROXIES: '127.0.0.1',
    // The movement tests move the clock 10 days on; the session must outlive that.
    SESSION_IDLE_SECONDS: String(20 * DAY_S),
  })
  owner = await newTenant(app, 'market')
  await setPlan(app, owner.tenantId, 'pro')
  ;[s1, s2, s3, s4, s5] = (await insertServers(app, owner.tenantId, ['rig-1', 'rig-2', 'rig-3', 'rig-4', 'rig-5'])) as [string, string, string, string, string]
  simA.putMachine(VAST_OWNER, 701, { hostname: 'rig-701', listed: true, gpu_name: 'RTX 4090', num_gpus: 2, listed_gpu_cost: 0.5 })
  simA.putMachine(VAST_OWNER, 702, { hostname: 'rig-702', listed: false, gpu_name: 'RTX 4090', num_gpus: 4, listed_gpu_cost: 0.2 })
  simA.putMachine(VAST_OWNER, 703, { hostname: 'rig-703', listed: true, gpu_name: 'RTX 5090', num_gpus: 8 })
  for (const offer of MARKET_A) simA.addMarketOffer(offer)
  await ok(call(app, 'PUT', '/marketplaces/marketplace_a', owner, { json: { api_key: KEY_A } }))
  await ok(call(app, 'PUT', '/marketplaces/marketplace_b', owner, { json: { api_key: KEY_B } }))
  for (const [server, marketplace, machine] of [
    [s1, 'marketplace_a', '701'],
    [s2, 'marketplace_a', '702'],
    [s3, 'marketplace_a', '703'],
    [s4, 'marketplace_b', '41'],
    [s5, 'marketplace_b', '42'],
  ] as const)
    await ok(call(app, 'POST', '/marketplaces/links', owner, { json: { server_id: server, marketplace, external_machine_id: machine } }), 201)
})
afterAll(async () => {
  await app.close()
  await simA.stop()
  await simB.stop()
})

async function ok<T = any>(res: Promise<Response>, status = 200): Promise<T> {
  const r = await res
  const text = await r.text()
  expect({ status: r.status, body: text }).toMatchObject({ status })
  return JSON.parse(text) as T
}
const get = async <T = any>(path: string, caller: Caller = owner) => ok<T>(call(app, 'GET', path, caller))
const stats = (query = '', headers: Record<string, string> = {}) => call(app, 'GET', `/marketplaces/stats${query}`, null, { headers })
const advance = (seconds: number) => ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
/** Runs marketplaces.sync; answers its detail and the service times it ran between. */
async function sync(): Promise<{ detail: string; from: number; to: number }> {
  const from = app.deps.clock.nowUs()
  const run = await ok<{ outcome: string; detail: string }>(app.fetch('/api/v1/_test/jobs/marketplaces.sync/run', { method: 'POST' }))
  const to = app.deps.clock.nowUs()
  expect(run.outcome).toBe('succeeded')
  return { detail: run.detail, from, to }
}
/** A timestamp the API wrote between two service times (microseconds; the API's milliseconds are compared). */
function expectBetween(at: string | null, window: { from: number; to: number }): void {
  expect(at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
  const ms = Date.parse(at!)
  expect(ms).toBeGreaterThanOrEqual(Math.floor(window.from / 1000))
  expect(ms).toBeLessThanOrEqual(Math.ceil(window.to / 1000))
}
const item = (marketplace: string, gpu_model: string, summary: Summary, taken: TakenAt) => ({
  marketplace,
  gpu_model,
  ...summary,
  taken_at: taken[marketplace as keyof TakenAt]!,
})
const byServer = (items: Row[]): Record<string, Row> => Object.fromEntries(items.map((i) => [i.server_id, i]))

/*
 * Without a marketplace filter the routes answer for marketplace_a alone (see the known defect at
 * the end of this file), so the checks below ask one marketplace at a time and put the two answers
 * together the way one unfiltered answer lists them: marketplace_a's items, then marketplace_b's.
 */
async function statsOfBoth(query = ''): Promise<Stats> {
  const a = await ok<Stats>(stats(`?marketplace=marketplace_a${query}`))
  const b = await ok<Stats>(stats(`?marketplace=marketplace_b${query}`))
  return { taken_at: { marketplace_a: a.taken_at.marketplace_a, marketplace_b: b.taken_at.marketplace_b }, items: [...a.items, ...b.items] }
}
async function movementOfBoth(query = ''): Promise<Movement> {
  const a = await get<Movement>(`/marketplaces/prices/movement?marketplace=marketplace_a${query}`)
  const b = await get<Movement>(`/marketplaces/prices/movement?marketplace=marketplace_b${query}`)
  expect(b.days).toBe(a.days)
  return { days: a.days, items: [...a.items, ...b.items] }
}

describe('before the first sync', () => {
  test('the public statistics are empty and say no marketplace was read yet', async () => {
    for (const query of ['', '?marketplace=marketplace_a', '?marketplace=marketplace_b']) {
      const res = await stats(query)
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ taken_at: { marketplace_a: null, marketplace_b: null }, items: [] })
    }
    expect((await movementOfBoth()).items).toEqual([])
  })
})

describe('public statistics', () => {
  test('one sync reads both markets: Vast anonymously, Clore with the connected key', async () => {
    simA.clearRequests()
    simB.clearRequests()
    const run = await sync()
    firstSync = run
    expect(run.detail).toContain('market marketplace_a: 3 models from 9 offers, marketplace_b: 3 models from 10 offers; 0 old snapshot rows pruned')
    const search = simA.requests().filter((r) => r.endpoint === 'bundles')
    expect(search).toHaveLength(1)
    expect(search[0]).toMatchObject({ identity: 'anonymous', status: 200 })
    const market = simB.requests.filter((r) => r.path === '/v1/marketplace')
    expect(market.length).toBeGreaterThan(0)
    expect(market.every((r) => r.key === 'tenant' && r.code === 0)).toBe(true)
    // Clore's market read is in the tenant's operations log as the system's, with the reason.
    const ops = await get<{ items: { operation: string; actor: { kind: string }; reason: string | null }[] }>('/marketplaces/operations?limit=100')
    expect(ops.items.filter((o) => o.operation === 'market.list')).toEqual([
      expect.objectContaining({ operation: 'market.list', actor: expect.objectContaining({ kind: 'system' }), reason: 'market statistics' }),
    ])
  })

  test('a sync within the hour leaves both markets unread: the snapshot is still fresh', async () => {
    const before = await statsOfBoth()
    simA.clearRequests()
    simB.clearRequests()
    expect((await sync()).detail).toContain('market marketplace_a: fresh, marketplace_b: fresh')
    expect(simA.requests().filter((r) => r.endpoint === 'bundles')).toEqual([])
    // Only the tenant's own listing reads `marketplace` (once); the market read is not in the operations log again.
    expect(simB.requests.filter((r) => r.path === '/v1/marketplace')).toHaveLength(1)
    const ops = await get<{ items: { operation: string }[] }>('/marketplaces/operations?limit=100')
    expect(ops.items.filter((o) => o.operation === 'market.list')).toHaveLength(1)
    expect(await statsOfBoth()).toEqual(before)
  })

  test('GET /marketplaces/stats without credentials answers the hand-computed summary per marketplace and model, cacheable for 60 s', async () => {
    for (const marketplace of ['marketplace_a', 'marketplace_b'] as const) {
      const res = await stats(`?marketplace=${marketplace}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('cache-control')).toBe('public, max-age=60')
      const body = (await res.json()) as Stats
      expectBetween(body.taken_at[marketplace], firstSync)
      expect(body.items).toEqual(
        marketplace === 'marketplace_a'
          ? [
              item('marketplace_a', 'a100', A_A100, body.taken_at),
              item('marketplace_a', 'rtx_3090', A_3090, body.taken_at),
              item('marketplace_a', 'rtx_4090', A_4090, body.taken_at),
            ]
          : [
              item('marketplace_b', 'a100', B_A100, body.taken_at),
              item('marketplace_b', 'rtx_3090', B_3090, body.taken_at),
              item('marketplace_b', 'rtx_4090', B_4090, body.taken_at),
            ],
      )
    }
    // One snapshot time per sync run, shared by both marketplaces.
    const both = await statsOfBoth()
    expect(both.taken_at.marketplace_a).toBe(both.taken_at.marketplace_b)
  })

  test('filters: marketplace and model together; a model nobody offers is an empty list; bad values are 422', async () => {
    const all = await statsOfBoth()
    const pick = (m: string, g: string) => all.items.filter((i) => i.marketplace === m && i.gpu_model === g)
    expect((await ok<Stats>(stats('?marketplace=marketplace_a&gpu_model=rtx_4090'))).items).toEqual(pick('marketplace_a', 'rtx_4090'))
    expect((await ok<Stats>(stats('?marketplace=marketplace_b&gpu_model=a100'))).items).toEqual(pick('marketplace_b', 'a100'))
    expect((await ok<Stats>(stats('?marketplace=marketplace_b&gpu_model=rtx_5090'))).items).toEqual([])
    // The key is the normalised model, not the platform's name.
    expect((await ok<Stats>(stats('?marketplace=marketplace_a&gpu_model=RTX%204090'))).items).toEqual([])
    await expectProblem(await stats('?marketplace=marketplace_c'), 422, 'validation_failed')
    await expectProblem(await stats(`?gpu_model=${'x'.repeat(129)}`), 422, 'validation_failed')
  })

  test('credentials are not needed but do no harm', async () => {
    const anonymous = await ok<Stats>(stats('?marketplace=marketplace_b'))
    expect(await get<Stats>('/marketplaces/stats?marketplace=marketplace_b')).toEqual(anonymous)
  })
})

describe('the tenant’s offers against the market', () => {
  test('GET /marketplaces/prices: each listed link’s price beside its model’s summary; unlisted links are left out', async () => {
    const body = await get<{ taken_at: TakenAt; items: Row[] }>('/marketplaces/prices')
    expect(body.taken_at).toEqual((await statsOfBoth()).taken_at)
    const summary = (s: Summary, marketplace: keyof TakenAt) => ({ ...s, taken_at: body.taken_at[marketplace] })
    expect(body.items).toHaveLength(4)
    expect(byServer(body.items)).toEqual({
      [s1]: {
        server_id: s1,
        marketplace: 'marketplace_a',
        external_machine_id: '701',
        gpu_model: 'rtx_4090',
        price_gpu_hour: '0.50',
        market: summary(A_4090, 'marketplace_a'),
      },
      [s3]: { server_id: s3, marketplace: 'marketplace_a', external_machine_id: '703', gpu_model: 'rtx_5090', price_gpu_hour: null, market: null },
      [s4]: {
        server_id: s4,
        marketplace: 'marketplace_b',
        external_machine_id: '41',
        gpu_model: 'rtx_4090',
        price_gpu_hour: '0.55',
        market: summary(B_4090, 'marketplace_b'),
      },
      [s5]: {
        server_id: s5,
        marketplace: 'marketplace_b',
        external_machine_id: '42',
        gpu_model: 'rtx_3090',
        price_gpu_hour: '0.50',
        market: summary(B_3090, 'marketplace_b'),
      },
    })
  })

  test('GET /marketplaces/prices/standing: cheaper, equal and dearer offers of the model and the mid-rank percentile, computed by hand', async () => {
    const body = await get<{ taken_at: TakenAt; items: Row[] }>('/marketplaces/prices/standing')
    expect(body.items).toHaveLength(4)
    expect(byServer(body.items)).toEqual({
      // 0.50 among [0.30, 0.35, 0.40, 0.50, 0.50, 0.60]: 100 × (3 + 2/2) ÷ 6 = 66.7 (its own offer is one of the two equal).
      [s1]: {
        server_id: s1,
        marketplace: 'marketplace_a',
        gpu_model: 'rtx_4090',
        price_gpu_hour: '0.50',
        market_offers: 6,
        cheaper: 3,
        equal: 2,
        dearer: 1,
        percentile: 66.7,
        median: '0.45',
      },
      // No market for the model and no price: nothing to compare.
      [s3]: {
        server_id: s3,
        marketplace: 'marketplace_a',
        gpu_model: 'rtx_5090',
        price_gpu_hour: null,
        market_offers: 0,
        cheaper: null,
        equal: null,
        dearer: null,
        percentile: null,
        median: null,
      },
      // 0.55 among [0.025, 0.25, 0.30, 0.50, 0.55, 0.833333]: 100 × (4 + 1/2) ÷ 6 = 75.
      [s4]: {
        server_id: s4,
        marketplace: 'marketplace_b',
        gpu_model: 'rtx_4090',
        price_gpu_hour: '0.55',
        market_offers: 6,
        cheaper: 4,
        equal: 1,
        dearer: 1,
        percentile: 75,
        median: '0.40',
      },
      // Alone in its market: the middle of it.
      [s5]: {
        server_id: s5,
        marketplace: 'marketplace_b',
        gpu_model: 'rtx_3090',
        price_gpu_hour: '0.50',
        market_offers: 1,
        cheaper: 0,
        equal: 1,
        dearer: 0,
        percentile: 50,
        median: '0.50',
      },
    })
  })

  test('GET /marketplaces/supply: listed offers and GPUs per marketplace and model beside the market’s, and the share of its GPUs', async () => {
    const body = await get<{ taken_at: TakenAt; items: Record<string, unknown>[] }>('/marketplaces/supply')
    expect(body.taken_at).toEqual((await statsOfBoth()).taken_at)
    const row = (
      marketplace: string,
      gpu_model: string,
      my_offers: number,
      my_gpus: number,
      market_offers: number,
      market_gpus: number,
      share: number | null,
    ) => ({
      marketplace,
      gpu_model,
      my_offers,
      my_gpus,
      my_gpus_for_rent: my_gpus, // none of these machines is rented
      market_offers,
      market_gpus,
      share_of_gpus: share,
    })
    expect(body.items).toEqual([
      row('marketplace_a', 'a100', 0, 0, 2, 3, 0),
      row('marketplace_a', 'rtx_3090', 0, 0, 1, 3, 0),
      row('marketplace_a', 'rtx_4090', 1, 2, 6, 20, 0.1), // 2 of 20
      row('marketplace_a', 'rtx_5090', 1, 8, 0, 0, null), // listed without a price: not in the market
      row('marketplace_b', 'a100', 0, 0, 1, 1, 0),
      row('marketplace_b', 'rtx_3090', 1, 1, 1, 1, 1),
      row('marketplace_b', 'rtx_4090', 1, 2, 6, 13, 0.154), // 2 of 13 = 0.1538…
    ])
  })

  test('a token allowlisted to one server sees only that server’s offers', async () => {
    const pat = await mintPat(app, owner, { scopes: ['marketplaces:read'], server_allowlist: [s1] })
    const prices = await get<{ items: { server_id: string }[] }>('/marketplaces/prices', pat.token)
    expect(prices.items.map((i) => i.server_id)).toEqual([s1])
    const standing = await get<{ items: { server_id: string; percentile: number }[] }>('/marketplaces/prices/standing', pat.token)
    expect(standing.items).toEqual([expect.objectContaining({ server_id: s1, percentile: 66.7 })])
    const supply = await get<{ items: { marketplace: string; gpu_model: string; my_offers: number; my_gpus: number }[] }>('/marketplaces/supply', pat.token)
    expect(supply.items.map((i) => [i.marketplace, i.gpu_model, i.my_offers, i.my_gpus])).toEqual([
      ['marketplace_a', 'a100', 0, 0],
      ['marketplace_a', 'rtx_3090', 0, 0],
      ['marketplace_a', 'rtx_4090', 1, 2],
      ['marketplace_b', 'a100', 0, 0],
      ['marketplace_b', 'rtx_3090', 0, 0],
      ['marketplace_b', 'rtx_4090', 0, 0],
    ])
  })
})

describe('access', () => {
  const VIEWS = ['/marketplaces/supply', '/marketplaces/prices', '/marketplaces/prices/movement', '/marketplaces/prices/standing']

  test('the four tenant views answer 401 without credentials, while the statistics answer 200', async () => {
    for (const path of VIEWS) await expectProblem(await call(app, 'GET', path, null), 401, 'unauthorized')
    expect((await stats()).status).toBe(200)
  })

  test('a token without marketplaces:read is refused them (403); one with it reads them', async () => {
    const other = await mintPat(app, owner, { scopes: ['servers:read'] })
    const reader = await mintPat(app, owner, { scopes: ['marketplaces:read'] })
    for (const path of VIEWS) {
      await expectProblem(await call(app, 'GET', path, other.token), 403, 'forbidden')
      expect((await call(app, 'GET', path, reader.token)).status).toBe(200)
    }
  })
})

describe('rate limit of the public statistics', () => {
  test('60 requests a minute per address; the 61st is 429 rate_limited with Retry-After, other addresses go on, and after the wait one more goes through', async () => {
    const from = { 'x-forwarded-for': BUSY_IP }
    // The test clock runs with real time: each second the requests take frees one more, so the count
    // is exactly 60 when they take under a second, and never more than 60 + the seconds they took.
    const started = performance.now()
    let allowed = 0
    let refused: Response | null = null
    while (refused === null && allowed < 200) {
      const res = await stats('', from)
      if (res.status === 429) refused = res
      else {
        expect(res.status).toBe(200)
        await res.text()
        allowed++
      }
    }
    const tookSeconds = (performance.now() - started) / 1000
    expect(refused).not.toBeNull()
    expect(allowed).toBeGreaterThanOrEqual(60)
    expect(allowed).toBeLessThanOrEqual(60 + Math.floor(tookSeconds))
    const retryAfter = refused!.headers.get('retry-after')
    expect(retryAfter).toBe('1')
    await expectProblem(refused!, 429, 'rate_limited')

    expect((await stats('', { 'x-forwarded-for': '198.51.100.62' })).status).toBe(200)
    expect((await stats()).status).toBe(200)
    await advance(Number(retryAfter))
    expect((await stats('', from)).status).toBe(200)
  })
})

describe('price movement', () => {
  test('with no snapshot `days` old yet, every model has from null and no change', async () => {
    const now = await statsOfBoth()
    for (const days of ['', '&days=1', '&days=90']) {
      const body = await movementOfBoth(days)
      expect(body.days).toBe(days === '' ? 7 : Number(days.slice(6)))
      expect(body.items).toEqual(
        now.items.map(({ marketplace, gpu_model, ...to }) => ({ marketplace, gpu_model, from: null, to, median_change: null, median_change_percent: null })),
      )
    }
  })

  test('8 days and a price change later: days=7 compares with the first snapshot; a model new since has from null; one gone is not listed', async () => {
    const first = await statsOfBoth()
    simA.clearMarketOffers()
    for (const offer of MARKET_A_LATER) simA.addMarketOffer(offer)
    simB.updateServer(MARKET_B, 'm3', { pricing: { 'USD-Blockchain': 9.6 } })
    simB.updateServer(MARKET_B, 'm5', { pricing: { bitcoin: 0.000396 } })
    await advance(8 * DAY_S)
    const second = await sync()
    expect(second.detail).toContain('market marketplace_a: 3 models from 9 offers, marketplace_b: 3 models from 10 offers')

    const now = await statsOfBoth()
    expectBetween(now.taken_at.marketplace_a, second)
    expectBetween(now.taken_at.marketplace_b, second)
    expect(now.items).toEqual([
      item('marketplace_a', 'a100', A_A100, now.taken_at),
      item('marketplace_a', 'h100', A_H100, now.taken_at),
      item('marketplace_a', 'rtx_4090', A_4090_LATER, now.taken_at),
      item('marketplace_b', 'a100', B_A100, now.taken_at),
      item('marketplace_b', 'rtx_3090', B_3090, now.taken_at),
      item('marketplace_b', 'rtx_4090', B_4090_LATER, now.taken_at),
    ])
    const was = (m: keyof TakenAt, s: Summary) => ({ ...s, taken_at: first.taken_at[m]! })
    const is = (m: keyof TakenAt, s: Summary) => ({ ...s, taken_at: now.taken_at[m]! })
    const unchanged = (m: keyof TakenAt, gpu_model: string, s: Summary) => ({
      marketplace: m,
      gpu_model,
      from: was(m, s),
      to: is(m, s),
      median_change: '0.00',
      median_change_percent: 0,
    })
    const moved = await movementOfBoth('&days=7')
    expect(moved).toEqual({
      days: 7,
      items: [
        unchanged('marketplace_a', 'a100', A_A100),
        { marketplace: 'marketplace_a', gpu_model: 'h100', from: null, to: is('marketplace_a', A_H100), median_change: null, median_change_percent: null },
        {
          marketplace: 'marketplace_a',
          gpu_model: 'rtx_4090',
          from: was('marketplace_a', A_4090),
          to: is('marketplace_a', A_4090_LATER),
          median_change: '0.04', // 0.49 − 0.45
          median_change_percent: 8.9, // 0.04 ÷ 0.45 = 8.89 %
        },
        unchanged('marketplace_b', 'a100', B_A100),
        unchanged('marketplace_b', 'rtx_3090', B_3090),
        {
          marketplace: 'marketplace_b',
          gpu_model: 'rtx_4090',
          from: was('marketplace_b', B_4090),
          to: is('marketplace_b', B_4090_LATER),
          median_change: '-0.11', // 0.29 − 0.40
          median_change_percent: -27.5,
        },
      ],
    })
    // The snapshot `days` ago is the latest at or before then: days=1 compares with the 8-day-old one too;
    // for days=9 or 90 no snapshot is that old, so nothing is compared.
    expect(await movementOfBoth('&days=1')).toEqual({ ...moved, days: 1 })
    for (const days of [9, 90])
      expect(await movementOfBoth(`&days=${days}`)).toEqual({
        days,
        items: moved.items.map((i) => ({ ...i, from: null, median_change: null, median_change_percent: null })),
      })
    // The model filter narrows the items as on the statistics.
    expect((await get<Movement>('/marketplaces/prices/movement?marketplace=marketplace_b&gpu_model=rtx_4090')).items).toEqual([moved.items[5]])
    expect((await get<Movement>('/marketplaces/prices/movement?marketplace=marketplace_a&gpu_model=rtx_3090')).items).toEqual([])
    // The standing follows the latest snapshot: 0.55 among [0.025, 0.20, 0.25, 0.33, 0.50, 0.55] = 100 × 5.5 ÷ 6.
    const standing = byServer((await get<{ items: Row[] }>('/marketplaces/prices/standing')).items)
    expect(standing[s4]).toMatchObject({ cheaper: 5, equal: 1, dearer: 0, percentile: 91.7, median: '0.29' })
  })

  test('two days and a sync later, days=1 compares with the second snapshot and days=7 still with the first', async () => {
    const second = await statsOfBoth()
    const weekAgo = await movementOfBoth()
    await advance(2 * DAY_S)
    await sync()
    const now = await statsOfBoth()
    expect(now.taken_at.marketplace_a).not.toBe(second.taken_at.marketplace_a)
    const withoutTakenAt = ({ taken_at: _, ...s }: StatsItem) => s
    expect(now.items.map(withoutTakenAt)).toEqual(second.items.map(withoutTakenAt))

    const day = await movementOfBoth('&days=1')
    expect(day.items.map((i) => [i.marketplace, i.gpu_model, i.from?.taken_at, i.median_change, i.median_change_percent])).toEqual(
      second.items.map((i) => [i.marketplace, i.gpu_model, i.taken_at, '0.00', 0]),
    )
    // The same comparison as two days ago; only `to` is the newer (equal) snapshot.
    const week = await movementOfBoth('&days=7')
    const withoutTo = ({ to: { taken_at: _, ...to }, ...i }: MovementItem) => ({ ...i, to })
    expect(week.items.map(withoutTo)).toEqual(weekAgo.items.map(withoutTo))
    expect(week.items.find((i) => i.gpu_model === 'h100')!.from).toBeNull()
  })

  test('a market is read again once its latest snapshot is 55 minutes old, not before', async () => {
    const last = await statsOfBoth()
    await advance(54 * 60)
    expect((await sync()).detail).toContain('market marketplace_a: fresh, marketplace_b: fresh')
    expect(await statsOfBoth()).toEqual(last)
    await advance(60)
    const run = await sync()
    expect(run.detail).toContain('market marketplace_a: 3 models from 9 offers, marketplace_b: 3 models from 10 offers')
    const now = await statsOfBoth()
    expectBetween(now.taken_at.marketplace_a, run)
    expectBetween(now.taken_at.marketplace_b, run)
  })

  test('days outside 1..90 or not a whole number is 422', async () => {
    for (const days of ['0', '91', '1.5', 'week'])
      await expectProblem(await call(app, 'GET', `/marketplaces/prices/movement?days=${days}`, owner), 422, 'validation_failed')
  })
})

/*
 * Known defects, reported and not fixed here. `test.failing` passes while the defect is there; once
 * it is fixed the test fails, and should become a plain `test`.
 */
describe('defects found by these tests, fixed', () => {
  // A fresh snapshot of both markets, so that each test here also fails for its defect when run alone (-t).
  beforeAll(async () => {
    await advance(3600)
    await sync()
    const both = await statsOfBoth()
    expect(both.items.map((i) => i.marketplace)).toEqual(expect.arrayContaining(['marketplace_a', 'marketplace_b']))
  })

  /*
   * market.model.ts declared the optional `marketplace` query with Elysia's t.UnionEnum, which gives
   * the schema `default: values[0]`; Elysia filled it in, so a request without `marketplace` was
   * answered as `?marketplace=marketplace_a`. Declared with Literals now, as everywhere else.
   */
  test('GET /marketplaces/stats without a marketplace filter lists both marketplaces', async () => {
    expect(await ok<Stats>(stats())).toEqual(await statsOfBoth())
  })

  test('GET /marketplaces/stats?gpu_model=… without a marketplace filter lists the model on both marketplaces', async () => {
    expect(await ok<Stats>(stats('?gpu_model=rtx_4090'))).toEqual(await statsOfBoth('&gpu_model=rtx_4090'))
  })

  test('GET /marketplaces/prices/movement without a marketplace filter lists both marketplaces', async () => {
    expect(await get<Movement>('/marketplaces/prices/movement')).toEqual(await movementOfBoth())
  })

  /*
   * ownPriceMicros (market.service.ts) converts a marketplace_b link's coin price with the rate the
   * link stores, `marketplace_b.spot.rates_usd_per_coin` (money: floored to 6 decimals), and the
   * market used the exact rate, so a tenant's own server stood below its own market entry. Both sides
   * now use the rate as the link shows it: with a CLORE rate of 0.0123456789 (shown 0.012345), server
   * 42 (4800 CLORE a day, one card) is 4800 × 0.012345 = 59.256 USD ÷ 24 = 2.469 on both sides.
   */
  test('a marketplace_b offer priced in a coin whose rate has more than 6 decimals stands equal to its own market entry', async () => {
    simB.setRates({ bitcoin: 60000, 'CLORE-Blockchain': 0.0123456789, 'USD-Blockchain': 1 })
    await advance(3600)
    expect((await sync()).detail).toContain('marketplace_b: 3 models from 10 offers')
    expect((await ok<Stats>(stats('?marketplace=marketplace_b&gpu_model=rtx_3090'))).items).toEqual([expect.objectContaining(flat(1, 1, '2.469'))])
    const standing = byServer((await get<{ items: Row[] }>('/marketplaces/prices/standing')).items)
    expect(standing[s5]).toMatchObject({ price_gpu_hour: '2.469', market_offers: 1, cheaper: 0, equal: 1, dearer: 0, percentile: 50 })
  })

  /*
   * Issue 35: rented GPUs were counted as the host's supply against a market of GPUs free to rent,
   * and the share capped at 1, so 8 rented H100 beside 3 for rent read "100 %". A rented machine's
   * GPUs are the host's (my_gpus) but not for rent (my_gpus_for_rent), and the share compares like
   * with like.
   */
  test('GET /marketplaces/supply: a rented machine is listed but not for rent, and adds nothing to the share', async () => {
    simB.addRental(KEY_B, 'own-4090', { id: 8041, currency: 'USD-Blockchain', price: 26.4 })
    try {
      await advance(3600)
      await sync()
      const rows = (await get<{ items: Record<string, unknown>[] }>('/marketplaces/supply')).items
      const row = rows.find((r) => r.marketplace === 'marketplace_b' && r.gpu_model === 'rtx_4090')!
      expect(row).toMatchObject({ my_offers: 1, my_gpus: 2, my_gpus_for_rent: 0, share_of_gpus: 0 })
    } finally {
      simB.removeRental(8041)
      await advance(3600)
      await sync()
    }
  })
})
