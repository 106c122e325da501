import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { formatTimestamp } from '../../src/platform/time'
import { insertServer, insertServers } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { rows } from '../support/commands'
import { api, newOwner, ok, setAccountState, type Owner } from '../support/fleet'

/**
 * Issue 17, offers and maintenance windows against both simulators over real HTTP: the exact body
 * each platform receives for publish, update, withdraw, announce and cancel (min_chunk never null,
 * per-TB → per-GB, end_date in unix seconds, per-coin per-day prices), the warnings Vast implies,
 * a refusal by the platform, marketplace_b's refusal of maintenance, keep-on re-publishing after an
 * outside unlist (with the reason in the operations log), the frozen rule, Idempotency-Key, and the
 * keys in no answer, log line, database file or WAL.
 */

const KEY_A = 'vast-offers-key-0123456789abcdef'
const KEY_B = 'clore-offers-key-5f2e9a17c3'
const KEYS = [KEY_A, KEY_B]
const VAST_OWNER = 5151
const OTHER_OWNER = 6161
const US = 1_000_000

type Problem = { code: string; detail?: string; errors?: { path: string; code: string }[] }
type Link = { server_id: string; marketplace: string; remote: Record<string, any>; marketplace_b?: Record<string, any> }
type OfferAnswer = { link: Link; warnings: { code: string; message: string }[]; extended_contracts: number | null }

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Owner
let s1: string
let s2: string
let s3: string
const seen: string[] = []

beforeAll(async () => {
  simA = await startMarketplaceA({
    rateScale: 0,
    owners: [
      { id: VAST_OWNER, email: 'host@example.com', keys: [{ key: KEY_A, label: 'offers' }] },
      { id: OTHER_OWNER, email: 'other@example.com', keys: [{ key: 'vast-other-owner-key-000000000', label: 'other' }] },
    ],
  })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    owners: {
      [KEY_B]: {
        label: 'alice',
        userId: 9,
        servers: [{ name: 'rig-b', id: 55, online: true, visibility: 'hidden', specs: { gpu: '2x NVIDIA GeForce RTX 3090' } }],
      },
    },
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url })
  owner = await newOwner(app, 'offers', 'pro')
  ;[s1, s2, s3] = (await insertServers(app, owner.tenantId, ['rig-1', 'rig-2', 'rig-3'])) as [string, string, string]
  simA.putMachine(VAST_OWNER, 701, { hostname: 'rig-701', listed: false, num_gpus: 4, gpu_name: 'RTX 4090' })
  simA.putMachine(VAST_OWNER, 703, { hostname: 'rig-703' })
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY_A } }))
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_b', { json: { api_key: KEY_B } }))
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: s1, marketplace: 'marketplace_a', external_machine_id: '701' } }), 201)
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: s2, marketplace: 'marketplace_b', external_machine_id: '55' } }), 201)
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: s3, marketplace: 'marketplace_a', external_machine_id: '703' } }), 201)
})
afterAll(async () => {
  await app.close()
  await simA.stop()
  await simB.stop()
})

async function send(method: string, path: string, json?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await api(app, owner, method, path, { json, headers })
  const text = await res.text()
  seen.push(text)
  return { status: res.status, body: text ? JSON.parse(text) : null }
}
const offer = (server: string, marketplace: string, json: unknown, headers: Record<string, string> = {}) =>
  send('PUT', `/marketplaces/links/${server}/${marketplace}/offer`, json, headers)
const maintenance = (server: string, marketplace: string, json: unknown) => send('PUT', `/marketplaces/links/${server}/${marketplace}/maintenance`, json)
const sync = () => ok(app.fetch('/api/v1/_test/jobs/marketplaces.sync/run', { method: 'POST' }))
const writesA = () => simA.requests().filter((r) => r.method !== 'GET' && r.endpoint !== 'bundles')
const writesB = () => simB.requests.filter((r) => r.method === 'POST')
/** A whole second `seconds` from the service's now (Vast speaks unix seconds). */
const secondsAhead = (seconds: number) => Math.floor(app.deps.clock.nowUs() / US) + seconds
const linkOf = async (server: string, marketplace: string): Promise<Link> =>
  (await send('GET', '/marketplaces/links')).body.links.find((l: Link) => l.server_id === server && l.marketplace === marketplace)

describe('publishing on marketplace_a', () => {
  test('the offer reaches Vast as create_asks with per-GB prices, min_chunk 1 and end_date in unix seconds', async () => {
    simA.clearRequests()
    const end = secondsAhead(30 * 86400)
    const r = await offer(s1, 'marketplace_a', {
      price_gpu_hour: '0.45',
      min_bid_hour: '0.30',
      price_storage_gb_month: '0.10',
      price_inet_up_tb: '5',
      price_inet_down_tb: '12.345678',
      end_date: formatTimestamp(end * US),
    })
    expect(r.status).toBe(200)
    expect(writesA().map((w) => [w.method, w.path, w.body])).toEqual([
      [
        'PUT',
        '/api/v0/machines/create_asks/',
        { machine: 701, price_gpu: 0.45, min_chunk: 1, price_min_bid: 0.3, price_disk: 0.1, price_inetu: 0.005, price_inetd: 0.012345678, end_date: end },
      ],
    ])
    const answer = r.body as OfferAnswer
    expect(answer.link.remote).toMatchObject({
      listed: true,
      price_gpu_hour: '0.45',
      min_bid_hour: '0.30',
      price_storage_gb_month: '0.10',
      price_inet_up_tb: '5.00',
      price_inet_down_tb: '12.345678',
      min_gpu_count: 1,
      end_date: formatTimestamp(end * US),
    })
    expect(answer.warnings.map((w) => w.code)).toEqual(['contracts_extended'])
    expect(answer.extended_contracts).toBe(0)
    // The next sync reads the same offer back from the platform.
    await sync()
    expect((await linkOf(s1, 'marketplace_a')).remote).toMatchObject({
      listed: true,
      price_gpu_hour: '0.45',
      price_inet_down_tb: '12.345678',
      min_gpu_count: 1,
    })
  })

  test('raising the price while renters run warns of pending increases; min_gpu_count becomes min_chunk and is kept when omitted', async () => {
    simA.addRental(701, { kind: 'on_demand', gpus: 2, running: true })
    await sync()
    simA.clearRequests()
    const raised = await offer(s1, 'marketplace_a', { price_gpu_hour: '0.50', min_gpu_count: 2 })
    expect(raised.status).toBe(200)
    expect((raised.body as OfferAnswer).warnings.map((w) => w.code)).toEqual(['pending_price_increase'])
    expect((raised.body as OfferAnswer).warnings[0]!.message).toContain('price_gpu_hour')
    // One renter: said in the singular.
    expect((raised.body as OfferAnswer).warnings[0]!.message).toContain('while 1 rental runs: each renter')
    const again = await offer(s1, 'marketplace_a', { price_gpu_hour: '0.40' })
    expect((again.body as OfferAnswer).warnings).toEqual([])
    expect(writesA().map((w) => w.body)).toEqual([
      { machine: 701, price_gpu: 0.5, min_chunk: 2 },
      { machine: 701, price_gpu: 0.4, min_chunk: 2 },
    ])
  })

  test('a request the platform turns down is 422 refused_by_marketplace with its reason', async () => {
    simA.putMachine(OTHER_OWNER, 703, { hostname: 'rig-703' }) // the machine changed hands on Vast
    const r = await offer(s3, 'marketplace_a', { price_gpu_hour: '0.40' })
    expect(r.status).toBe(422)
    expect((r.body as Problem).errors).toEqual([{ path: '', code: 'refused_by_marketplace' }])
    expect((r.body as Problem).detail).toContain('Only machine owner can create ask contracts')
    expect((await send('GET', '/marketplaces/accounts')).body.items.find((c: { marketplace: string }) => c.marketplace === 'marketplace_a').status).toBe(
      'connected',
    )
  })

  test('bad values and the other platform’s fields are refused before anything is sent', async () => {
    simA.clearRequests()
    const cases: [unknown, string, string][] = [
      [{ min_bid_hour: '0.1' }, '/price_gpu_hour', 'required'],
      [{ price_gpu_hour: '0' }, '/price_gpu_hour', 'too_small'],
      [{ price_gpu_hour: '0.4', price_disk_x: 1 }, '', ''],
      [{ price_gpu_hour: '0.4', end_date: formatTimestamp(app.deps.clock.nowUs() - 60 * US) }, '/end_date', 'not_in_future'],
      [{ price_gpu_hour: '0.4', coin_prices: { bitcoin: { on_demand: '0.0001' } } }, '/coin_prices', 'not_supported_by_marketplace'],
      [{ price_gpu_hour: 0.4 }, '/price_gpu_hour', ''],
    ]
    for (const [body, path, code] of cases) {
      const r = await offer(s1, 'marketplace_a', body)
      expect(r.status).toBe(422)
      expect((r.body as Problem).code).toBe('validation_failed')
      if (code) expect((r.body as Problem).errors?.[0]).toEqual({ path, code })
    }
    expect(writesA()).toEqual([])
  })

  test('withdrawing sends DELETE /machines/{id}/asks/ and shows the machine unlisted', async () => {
    simA.clearRequests()
    const r = await send('DELETE', `/marketplaces/links/${s1}/marketplace_a/offer`)
    expect(r.status).toBe(204)
    expect(writesA().map((w) => [w.method, w.path, w.body])).toEqual([['DELETE', '/api/v0/machines/701/asks/', null]])
    expect((await linkOf(s1, 'marketplace_a')).remote.listed).toBe(false)
  })
})

describe('publishing on marketplace_b', () => {
  test('coin prices reach Clore as set_server_settings per coin, enabled and pinned, with mrl', async () => {
    simB.clearRequests()
    const r = await offer(s2, 'marketplace_b', {
      coin_prices: { bitcoin: { on_demand: '0.0001', spot: '0.00005' }, 'USD-Blockchain': { on_demand: '6.5' } },
      max_rental_hours: 72,
    })
    expect(r.status).toBe(200)
    expect(writesB().map((w) => [w.path, w.body])).toEqual([
      [
        '/v1/set_server_settings',
        {
          name: 'rig-b',
          availability: true,
          bitcoin_on_demand: 0.0001,
          bitcoin_spot: 0.00005,
          'enabled-bitcoin': true,
          'USD-Blockchain_on_demand': 6.5,
          'enabled-USD-Blockchain': true,
          autoprice: { bitcoin: false, 'USD-Blockchain': false },
          mrl: 72,
        },
      ],
    ])
    const link = (r.body as OfferAnswer).link
    expect(link.remote.listed).toBe(true)
    expect(link.marketplace_b).toMatchObject({
      max_rental_hours: 72,
      coin_prices: { bitcoin: { on_demand: '0.0001', spot: '0.00005' }, 'USD-Blockchain': { on_demand: '6.5', spot: null } },
    })
    expect((r.body as OfferAnswer).warnings).toEqual([])
    expect(simB.server(KEY_B, 'rig-b')).toMatchObject({ visibility: 'public', mrl: 72 })
  })

  test('USD fields, a missing coin_prices and an unknown coin are refused before anything is sent', async () => {
    simB.clearRequests()
    const cases: [unknown, string, string][] = [
      [{ price_gpu_hour: '0.4' }, '/price_gpu_hour', 'not_supported_by_marketplace'],
      [{ max_rental_hours: 24 }, '/coin_prices', 'required'],
      [{ coin_prices: { dogecoin: { on_demand: '1' } } }, '/coin_prices/dogecoin', 'unknown_coin'],
    ]
    for (const [body, path, code] of cases) {
      const r = await offer(s2, 'marketplace_b', body)
      expect(r.status).toBe(422)
      expect((r.body as Problem).errors?.[0]).toEqual({ path, code })
    }
    expect(writesB()).toEqual([])
  })

  test('withdrawing sends availability false', async () => {
    simB.clearRequests()
    expect((await send('DELETE', `/marketplaces/links/${s2}/marketplace_b/offer`)).status).toBe(204)
    expect(writesB().map((w) => w.body)).toEqual([{ name: 'rig-b', availability: false }])
    expect(simB.server(KEY_B, 'rig-b')?.visibility).toBe('hidden')
  })
})

describe('maintenance windows', () => {
  test('marketplace_a: announced through dnotify with whole hours and a category, reflected in remote.maintenance_*', async () => {
    simA.clearRequests()
    const start = secondsAhead(2 * 86400)
    const r = await maintenance(s1, 'marketplace_a', { starts_at: formatTimestamp(start * US), hours: 3, category: 'gpu', reason: 'swap a card' })
    expect(r.status).toBe(200)
    expect(writesA().map((w) => [w.method, w.path, w.body])).toEqual([
      ['PUT', '/api/v0/machines/701/dnotify/', { client_id: 'me', sdate: start, duration: 3, maintenance_category: 'gpu', maintenance_reason: 'swap a card' }],
    ])
    const expected = { maintenance_announced: true, maintenance_starts_at: formatTimestamp(start * US), maintenance_hours: 3 }
    expect(r.body.link.remote).toMatchObject(expected)
    await sync()
    expect((await linkOf(s1, 'marketplace_a')).remote).toMatchObject(expected)
  })

  test('a start in the past or more than a year ahead, or fractional hours, is refused before anything is sent', async () => {
    simA.clearRequests()
    for (const body of [
      { starts_at: formatTimestamp(app.deps.clock.nowUs() - 60 * US), hours: 1, category: 'power' },
      { starts_at: formatTimestamp((secondsAhead(0) + 400 * 86400) * US), hours: 1, category: 'power' },
      { starts_at: formatTimestamp(secondsAhead(3600) * US), hours: 1.5, category: 'power' },
      { starts_at: formatTimestamp(secondsAhead(3600) * US), hours: 1, category: 'weather' },
    ]) {
      const r = await maintenance(s1, 'marketplace_a', body)
      expect(r.status).toBe(422)
    }
    expect(writesA()).toEqual([])
  })

  test('marketplace_a: cancelling sends cancel_maint and clears remote.maintenance_*', async () => {
    simA.clearRequests()
    expect((await send('DELETE', `/marketplaces/links/${s1}/marketplace_a/maintenance`)).status).toBe(204)
    expect(writesA().map((w) => [w.path, w.body])).toEqual([['/api/v0/machines/701/cancel_maint/', { client_id: 'me', machine_id: 701 }]])
    expect((await linkOf(s1, 'marketplace_a')).remote).toMatchObject({ maintenance_announced: false, maintenance_starts_at: null, maintenance_hours: null })
  })

  test('marketplace_b has no maintenance API: 422 pointing to withdrawing the offer, nothing sent', async () => {
    simB.clearRequests()
    const r = await maintenance(s2, 'marketplace_b', { starts_at: formatTimestamp(secondsAhead(3600) * US), hours: 2, category: 'power' })
    expect(r.status).toBe(422)
    expect((r.body as Problem).errors).toEqual([{ path: '', code: 'not_supported_by_marketplace' }])
    expect((r.body as Problem).detail).toContain('/offer')
    expect((await send('DELETE', `/marketplaces/links/${s2}/marketplace_b/maintenance`)).status).toBe(422)
    expect(writesB()).toEqual([])
  })
})

describe('fleet maintenance offers to announce', () => {
  test('declaring maintenance on a server lists its linked platforms and how to announce there, and sends nothing', async () => {
    simA.clearRequests()
    simB.clearRequests()
    const a = await ok(await api(app, owner, 'PUT', `/servers/${s1}/maintenance`, { json: { reason: 'new PSU' } }))
    expect(a.announce_on).toEqual([
      {
        marketplace: 'marketplace_a',
        external_machine_id: '701',
        supported: true,
        how: `PUT /api/v1/marketplaces/links/${s1}/marketplace_a/maintenance {starts_at, hours, category, reason?}`,
      },
    ])
    const b = await ok(await api(app, owner, 'PUT', `/servers/${s2}/maintenance`))
    expect(b.announce_on).toEqual([
      {
        marketplace: 'marketplace_b',
        external_machine_id: '55',
        supported: false,
        how: `no maintenance API: DELETE /api/v1/marketplaces/links/${s2}/marketplace_b/offer to keep renters off`,
      },
    ])
    expect(writesA()).toEqual([])
    expect(writesB()).toEqual([])
    await api(app, owner, 'DELETE', `/servers/${s1}/maintenance`)
    await api(app, owner, 'DELETE', `/servers/${s2}/maintenance`)
  })
})

describe('keep-on', () => {
  test('an offer unlisted outside gpuhq is published again by the sync, with the reason in the operations log', async () => {
    expect((await offer(s1, 'marketplace_a', { price_gpu_hour: '0.42', price_inet_up_tb: '4' })).status).toBe(200)
    await ok(await api(app, owner, 'PUT', `/servers/${s1}/keep-on/marketplace_a`))
    simA.updateMachine(701, { listed: false }) // the host unlisted it in Vast's console
    simA.clearRequests()
    await sync()
    expect(writesA().map((w) => w.body)).toEqual([{ machine: 701, price_gpu: 0.42, min_chunk: 2, price_inetu: 0.004 }])
    expect((await linkOf(s1, 'marketplace_a')).remote.listed).toBe(true)
    // The newest of the server's calls apart from the sync's renter-report read (docs/marketplaces.md "Renter reports").
    const ops = (await send('GET', `/servers/${s1}/operations?limit=5`)).body.items.filter((o: { operation: string }) => o.operation !== 'machine.reports')
    expect(ops[0]).toMatchObject({ operation: 'offer.publish', outcome: 'ok', actor: { kind: 'system', id: null } })
    expect(ops[0].reason).toContain('keep-on')
    expect(await rows(app, sql`SELECT kind FROM server_events WHERE server_id = ${s1} AND kind = ${'marketplace.offer_republished'}`)).toHaveLength(1)
  })

  test('without keep-on, or after a withdrawal through gpuhq, an unlisted machine stays unlisted', async () => {
    await ok(await api(app, owner, 'DELETE', `/servers/${s1}/keep-on/marketplace_a`), 200)
    simA.updateMachine(701, { listed: false })
    simA.clearRequests()
    await sync()
    expect(writesA()).toEqual([])
    await ok(await api(app, owner, 'PUT', `/servers/${s1}/keep-on/marketplace_a`))
    expect((await send('DELETE', `/marketplaces/links/${s1}/marketplace_a/offer`)).status).toBe(204)
    simA.clearRequests()
    await sync()
    expect(writesA()).toEqual([]) // the withdrawal dropped the kept offer
  })
})

describe('the house rules', () => {
  test('a frozen account cannot publish or announce, but can still withdraw', async () => {
    await setAccountState(app, owner.tenantId, 'frozen')
    try {
      expect((await offer(s1, 'marketplace_a', { price_gpu_hour: '0.4' })).body.code).toBe('account_frozen')
      expect((await maintenance(s1, 'marketplace_a', { starts_at: formatTimestamp(secondsAhead(3600) * US), hours: 1, category: 'power' })).body.code).toBe(
        'account_frozen',
      )
      expect((await send('DELETE', `/marketplaces/links/${s1}/marketplace_a/offer`)).status).toBe(204)
    } finally {
      await setAccountState(app, owner.tenantId, 'active')
    }
  })

  test('a retry with the same Idempotency-Key replays the answer without a second call to the platform', async () => {
    simA.clearRequests()
    const headers = { 'Idempotency-Key': 'offer-retry-1' }
    const first = await offer(s1, 'marketplace_a', { price_gpu_hour: '0.44' }, headers)
    const second = await offer(s1, 'marketplace_a', { price_gpu_hour: '0.44' }, headers)
    expect(first.status).toBe(200)
    expect(second).toEqual(first)
    expect(writesA()).toHaveLength(1)
  })

  test('each offer published through gpuhq is a price notification naming the server and the prices', async () => {
    const items = (await send('GET', '/notifications/history?limit=100')).body.items as { category: string; title: string; body: string }[]
    const prices = items.filter((i) => i.category === 'price')
    expect(prices.length).toBeGreaterThan(0)
    expect(prices.some((p) => p.title === 'Offer updated: rig-1' && p.body.includes('0.44 USD per GPU-hour'))).toBe(true)
    expect(prices.some((p) => p.title === 'Offer updated: rig-2' && p.body.includes('0.0001 bitcoin/day'))).toBe(true)
  })

  test('a server without a link there is 404; another tenant’s server is 404', async () => {
    const bare = await insertServer(app, owner.tenantId, 'rig-bare')
    expect((await offer(bare, 'marketplace_a', { price_gpu_hour: '0.4' })).status).toBe(404)
    const stranger = await newOwner(app, 'offers-stranger', 'pro')
    const res = await api(app, stranger, 'PUT', `/marketplaces/links/${s1}/marketplace_a/offer`, { json: { price_gpu_hour: '0.4' } })
    expect(res.status).toBe(404)
  })

  test('no key appears in any answer, log line, database file or WAL, nor in the simulators’ logs', () => {
    const logs = app.rawLogs.join('\n')
    const stored = readdirSync(app.dir)
      .filter((f) => f.startsWith('gpuhq.db'))
      .map((f) => readFileSync(join(app.dir, f)).toString('latin1'))
      .join('\n')
    for (const key of KEYS) {
      expect(logs).not.toContain(key)
      expect(stored).not.toContain(key)
      expect(seen.join('\n')).not.toContain(key)
    }
    expect(JSON.stringify(simA.requests()) + JSON.stringify(simB.requests)).not.toMatch(new RegExp(KEYS.join('|')))
  })
})
