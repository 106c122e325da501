import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { formatTimestamp } from '../../src/platform/time'
import { call, insertServer, insertServers, mintPat, newTenant, setPlan, type Caller, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { cloreFullServer, NULL_REMOTE, vastFullMachine, vastFullRemote } from '../support/marketplaces'

/**
 * Issue 16, links: POST/GET/DELETE /marketplaces/links against both simulators over real HTTP.
 * Every `remote` and `marketplace_b` field comes through the API from a machine that sets it and is
 * null from one that does not; conflicts, the allowlist, the cascade on disconnect, the electricity
 * cost from power telemetry, the operations log per server, and the key in no answer.
 */

const KEY_A = 'vast-links-key-0123456789abcdef'
const KEY_B = 'clore-links-key-5f2e9a17c3'
const OTHER_B = 'clore-renter-key-0b8d44e6a1'
const KEYS = [KEY_A, KEY_B]
const US = 1_000_000
const HOUR = 3600 * US

const FULL_B = cloreFullServer(KEY_B, OTHER_B)

type Link = {
  server_id: string
  marketplace: string
  external_machine_id: string
  bind_mode: string
  state: string
  linked_at: string
  last_seen_at: string | null
  remote: Record<string, unknown>
  marketplace_b?: Record<string, unknown>
  electricity_usd_per_gpu_hour: string | null
}
type Problem = { code: string; errors?: { path: string; code: string }[] }

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Member
let stranger: Member
let s1: string
let s2: string
let s3: string
let s4: string
const seen: string[] = []
let setupNowS = 0

beforeAll(async () => {
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: 4242, email: 'host@example.com', keys: [{ key: KEY_A, label: 'links' }] }] })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    currencyRatesInUsd: { bitcoin: 60000, 'CLORE-Blockchain': 0.0025, 'USD-Blockchain': 1 },
    owners: { [KEY_B]: { label: 'alice', userId: 7, servers: [FULL_B, { name: 'bare' }] } },
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url })
  owner = await newTenant(app, 'links')
  stranger = await newTenant(app, 'links-stranger')
  await setPlan(app, owner.tenantId, 'pro')
  await setPlan(app, stranger.tenantId, 'pro')
  ;[s1, s2, s3, s4] = (await insertServers(app, owner.tenantId, ['rig-1', 'rig-2', 'rig-3', 'rig-4'])) as [string, string, string, string]
  setupNowS = Math.floor(app.deps.clock.nowUs() / US)
  const nowS = setupNowS
  simA.putMachine(4242, 501, vastFullMachine(nowS))
  simA.putMachine(4242, 502)
  for (const [m, key] of [
    ['marketplace_a', KEY_A],
    ['marketplace_b', KEY_B],
  ] as const) {
    const res = await call(app, 'PUT', `/marketplaces/${m}`, owner, { json: { api_key: key } })
    expect(res.status).toBe(200)
  }
})
afterAll(async () => {
  await app.close()
  await simA.stop()
  await simB.stop()
})

async function req(method: string, path: string, caller: Caller, json?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await call(app, method, path, caller, { json })
  const text = await res.text()
  seen.push(text)
  return { status: res.status, body: text ? JSON.parse(text) : null }
}
const link = (caller: Caller, server_id: string, marketplace: string, external_machine_id: string) =>
  req('POST', '/marketplaces/links', caller, { server_id, marketplace, external_machine_id })
const list = async (caller: Caller = owner) => {
  const r = await req('GET', '/marketplaces/links', caller)
  expect(r.status).toBe(200)
  return (r.body as { links: Link[] }).links
}
const find = (items: Link[], server: string, marketplace: string) => items.find((l) => l.server_id === server && l.marketplace === marketplace)

describe('linking a server to a machine', () => {
  test('marketplace_a: every remote field comes from the listing, the answer is the link with electricity null and no marketplace_b', async () => {
    const r = await link(owner, s1, 'marketplace_a', '501')
    expect(r.status).toBe(201)
    const l = r.body as Link
    expect(l).toMatchObject({
      server_id: s1,
      marketplace: 'marketplace_a',
      external_machine_id: '501',
      bind_mode: 'manual',
      state: 'linked',
      electricity_usd_per_gpu_hour: null,
    })
    expect(l.last_seen_at).toBe(l.linked_at)
    expect('marketplace_b' in l).toBe(false)
    expect(l.remote).toEqual(vastFullRemote(formatTimestamp((setupNowS + 3600) * US)))
    expect(find(await list(), s1, 'marketplace_a')).toEqual(l)
  })

  test('marketplace_a: a machine that sets nothing maps to nulls, never zero', async () => {
    const r = await link(owner, s2, 'marketplace_a', '502')
    expect(r.status).toBe(201)
    expect((r.body as Link).remote).toEqual(NULL_REMOTE)
  })

  test('marketplace_b: remote and the marketplace_b object from a server that sets every field; nulls from one that sets nothing', async () => {
    const full = await link(owner, s1, 'marketplace_b', '41')
    expect(full.status).toBe(201)
    const l = full.body as Link
    expect(l.remote).toEqual({
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
    expect(l.marketplace_b).toEqual({
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
        best_bid_usd: '3.75',
      },
    })
    const bare = await link(owner, s2, 'marketplace_b', 'bare')
    expect(bare.status).toBe(201)
    expect((bare.body as Link).remote).toEqual({ ...NULL_REMOTE, hostname: 'bare' })
    expect(Object.values((bare.body as Link).marketplace_b!).every((v) => v === null)).toBe(true)
    const items = await list()
    expect(find(items, s1, 'marketplace_b')!.marketplace_b).toEqual(l.marketplace_b!)
    expect(items.filter((i) => i.marketplace === 'marketplace_a').every((i) => !('marketplace_b' in i))).toBe(true)
  })

  test('a machine the listing does not show is 422 on /external_machine_id', async () => {
    const r = await link(owner, s3, 'marketplace_a', '999')
    expect(r.status).toBe(422)
    expect((r.body as Problem).errors![0]).toEqual({ path: '/external_machine_id', code: 'not_found_on_marketplace' })
  })

  test('a marketplace with no connected account is 409; another tenant’s server is 404; a server linked there already is 409', async () => {
    const other = await insertServer(app, stranger.tenantId, 'theirs')
    const notConnected = await link(stranger, other, 'marketplace_a', '501')
    expect(notConnected.status).toBe(409)
    expect((notConnected.body as Problem).code).toBe('conflict')
    const foreign = await link(owner, other, 'marketplace_a', '501')
    expect(foreign.status).toBe(404)
    const again = await link(owner, s1, 'marketplace_a', '502')
    expect(again.status).toBe(409)
  })

  test('an unreachable marketplace is 503 with Retry-After and links nothing', async () => {
    await simA.setMode('unreachable')
    try {
      const res = await call(app, 'POST', '/marketplaces/links', owner, { json: { server_id: s3, marketplace: 'marketplace_a', external_machine_id: '501' } })
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
    } finally {
      await simA.setMode('ok')
    }
    expect(find(await list(), s3, 'marketplace_a')).toBeUndefined()
  })

  test('a machine claimed by two servers puts both links in conflict; deleting one returns the other to linked', async () => {
    const r = await link(owner, s3, 'marketplace_a', '501')
    expect(r.status).toBe(201)
    expect((r.body as Link).state).toBe('conflict')
    expect(find(await list(), s1, 'marketplace_a')!.state).toBe('conflict')
    expect((await req('DELETE', `/marketplaces/links/${s3}/marketplace_a`, owner)).status).toBe(204)
    expect((await req('DELETE', `/marketplaces/links/${s3}/marketplace_a`, owner)).status).toBe(404)
    const items = await list()
    expect(find(items, s1, 'marketplace_a')!.state).toBe('linked')
    expect(find(items, s3, 'marketplace_a')).toBeUndefined()
  })

  test('the calls made for a link are in the operations log with the server id, and in the server’s own log', async () => {
    const r = await req('GET', `/servers/${s2}/operations`, owner)
    const items = (r.body as { items: { server_id: string; marketplace: string }[] }).items
    expect(items.length).toBeGreaterThanOrEqual(2)
    expect(items.every((o) => o.server_id === s2)).toBe(true)
    expect(new Set(items.map((o) => o.marketplace))).toEqual(new Set(['marketplace_a', 'marketplace_b']))
  })
})

describe('the list', () => {
  test('electricity per GPU-hour = tariff × average GPU power over 7 days ÷ cards; null without a tariff or without measurements', async () => {
    const now = app.deps.clock.nowUs()
    const hour = Math.floor(now / HOUR) * HOUR
    await app.deps.db.run(sql`UPDATE servers SET electricity_micros_per_kwh = 200000, gpu_count = 2 WHERE id = ${s1}`)
    await app.deps.db.run(sql`UPDATE servers SET electricity_micros_per_kwh = 200000, gpu_count = 2 WHERE id = ${s4}`)
    await app.deps.db.run(sql`UPDATE servers SET gpu_count = 2 WHERE id = ${s2}`)
    const series = async (server: string, gpu: number, metric = 'power_w') => {
      await app.deps.db.run(sql`INSERT INTO metric_series (server_id, gpu_index, metric) VALUES (${server}, ${gpu}, ${metric})`)
      return (
        (await app.deps.db.get(sql`SELECT id FROM metric_series WHERE server_id = ${server} AND gpu_index = ${gpu} AND metric = ${metric}`)) as { id: number }
      ).id
    }
    const rollup = async (id: number, bucket: number, avg: number) =>
      await app.deps.db.run(
        sql`INSERT INTO metric_rollups (series_id, grain, bucket, min, max, avg, p50, p95, last, samples) VALUES (${id}, 3600, ${bucket}, ${avg}, ${avg}, ${avg}, ${avg}, ${avg}, ${avg}, 12)`,
      )
    const [g0, g1] = [await series(s1, 0), await series(s1, 1)]
    // Two hours measured: 300 + 250 W, then 350 + 250 W → 575 W on average; an older hour is outside the window.
    await rollup(g0, hour - 2 * HOUR, 300)
    await rollup(g1, hour - 2 * HOUR, 250)
    await rollup(g0, hour - HOUR, 350)
    await rollup(g1, hour - HOUR, 250)
    await rollup(g0, hour - 8 * 24 * HOUR, 5000)
    await rollup(await series(s1, 0, 'temperature_c'), hour - HOUR, 80)
    const [h0] = [await series(s2, 0)]
    await rollup(h0, hour - HOUR, 300)
    const items = await list()
    // 0.20 USD/kWh × 0.575 kW ÷ 2 cards = 0.0575 USD per GPU-hour, on every link of the server.
    expect(find(items, s1, 'marketplace_a')!.electricity_usd_per_gpu_hour).toBe('0.0575')
    expect(find(items, s1, 'marketplace_b')!.electricity_usd_per_gpu_hour).toBe('0.0575')
    // s2 has power but no tariff.
    expect(find(items, s2, 'marketplace_a')!.electricity_usd_per_gpu_hour).toBeNull()
  })

  test('a server with a tariff but no power measurements has no electricity cost', async () => {
    await req('DELETE', `/marketplaces/links/${s2}/marketplace_a`, owner)
    await app.deps.db.run(sql`UPDATE servers SET electricity_micros_per_kwh = 100000 WHERE id = ${s3}`)
    const r = await link(owner, s3, 'marketplace_a', '502')
    expect(r.status).toBe(201)
    expect(find(await list(), s3, 'marketplace_a')!.electricity_usd_per_gpu_hour).toBeNull()
  })

  test('a token sees, links and unlinks only the servers in its allowlist', async () => {
    const pat = (await mintPat(app, owner, { name: 'links', scopes: ['marketplaces:read', 'marketplaces:write'], server_allowlist: [s1] })).token
    const items = await list(pat)
    expect(items.length).toBe(2)
    expect(items.every((l) => l.server_id === s1)).toBe(true)
    expect((await link(pat, s4, 'marketplace_a', '502')).status).toBe(404)
    expect((await req('DELETE', `/marketplaces/links/${s3}/marketplace_a`, pat)).status).toBe(404)
    expect(find(await list(), s3, 'marketplace_a')).toBeDefined()
  })

  test('disconnecting a marketplace drops its links by cascade', async () => {
    expect((await list()).some((l) => l.marketplace === 'marketplace_b')).toBe(true)
    expect((await req('DELETE', '/marketplaces/marketplace_b', owner)).status).toBe(204)
    expect((await list()).some((l) => l.marketplace === 'marketplace_b')).toBe(false)
    const rows = (await app.deps.db.get(sql`SELECT count(*) AS n FROM marketplace_links WHERE marketplace = 'marketplace_b'`)) as { n: number }
    expect(rows.n).toBe(0)
  })

  test('no answer ever carried a key', () => {
    expect(seen.length).toBeGreaterThan(10)
    for (const text of seen) for (const k of KEYS) expect(text).not.toContain(k)
  })
})
