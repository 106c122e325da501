import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { call, insertServer, type Member, newTenant, setPlan } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { expectProblem } from '../support/problem'

/**
 * Issue 34, finding 4: no free listings, on any platform and by any path. marketplace_b took a
 * price of 0 (`{"USD-Blockchain":{"on_demand":"0"}}` → 200, published) where marketplace_a refused
 * it, and an AI assistant allowed `marketplaces.set_offer` could do the same. One check of rental
 * prices now stands in every publication: PUT …/offer (so the AI tool: prices-above-zero-mcp.test.ts),
 * keep-on, strategy's evaluation (a policy never suggests zero) and accepting a suggestion. Both simulators over real HTTP; nothing
 * refused ever reaches a platform.
 */

const KEY_A = 'vast-zero-price-key-0123456789abc'
const KEY_B = 'clore-zero-price-key-5f2e9a17c3'
const VAST_OWNER = 7272

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Member
/** Linked to Vast 921. */
let onA: string
/** Linked to Clore 61: 2 × RTX 4090 at 26.4 USD-Blockchain a day (0.55 per GPU-hour). */
let onB: string

async function ok<T = any>(res: Promise<Response>, status = 200): Promise<T> {
  const r = await res
  const text = await r.text()
  expect({ status: r.status, body: text }).toMatchObject({ status })
  return (text ? JSON.parse(text) : null) as T
}
const send = (method: string, path: string, json?: unknown) => call(app, method, path, owner, { json })
const runJob = (job: string) => ok<{ outcome: string; detail: string }>(app.fetch(`/api/v1/_test/jobs/${job}/run`, { method: 'POST' }))
const writesA = () => simA.requests().filter((r) => r.method !== 'GET' && r.endpoint !== 'bundles')
const writesB = () => simB.requests.filter((r) => r.method === 'POST')

beforeAll(async () => {
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: VAST_OWNER, email: 'zero@example.com', keys: [{ key: KEY_A, label: 'zero' }] }] })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    currencyRatesInUsd: { bitcoin: 60000, 'CLORE-Blockchain': 0.0025, 'USD-Blockchain': 1 },
    owners: {
      [KEY_B]: {
        label: 'zero',
        userId: 8,
        servers: [
          { name: 'own-4090', id: 61, visibility: 'public', pricing: { 'USD-Blockchain': 26.4 }, specs: { gpu: '2x NVIDIA GeForce RTX 4090' } },
          // The rest of the RTX 4090 market per GPU-hour: 0.004, 0.004 (USD-Blockchain 0.096 a day) and 1.00.
          { name: 'm1', id: 611, visibility: 'public', pricing: { 'USD-Blockchain': 0.096 }, specs: { gpu: '1x NVIDIA GeForce RTX 4090' } },
          { name: 'm2', id: 612, visibility: 'public', pricing: { 'USD-Blockchain': 0.096 }, specs: { gpu: '1x NVIDIA GeForce RTX 4090' } },
          { name: 'm3', id: 613, visibility: 'public', pricing: { 'USD-Blockchain': 24 }, specs: { gpu: '1x NVIDIA GeForce RTX 4090' } },
        ],
      },
    },
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url, SESSION_IDLE_SECONDS: String(30 * 86400), LOG_LEVEL: 'silent' })
  owner = await newTenant(app, 'zero-price')
  // Contract-priced: gpuhq's own charge is unknown, so with no cost basis the floor is zero.
  await setPlan(app, owner.tenantId, 'enterprise')
  onA = await insertServer(app, owner.tenantId, 'rig-a')
  onB = await insertServer(app, owner.tenantId, 'rig-b')
  simA.putMachine(VAST_OWNER, 921, { hostname: 'rig-921', listed: false, num_gpus: 2, gpu_name: 'RTX 4090' })
  await ok(send('PUT', '/marketplaces/marketplace_a', { api_key: KEY_A }))
  await ok(send('PUT', '/marketplaces/marketplace_b', { api_key: KEY_B }))
  await ok(send('POST', '/marketplaces/links', { server_id: onA, marketplace: 'marketplace_a', external_machine_id: '921' }), 201)
  await ok(send('POST', '/marketplaces/links', { server_id: onB, marketplace: 'marketplace_b', external_machine_id: '61' }), 201)
  await runJob('marketplaces.sync')
})
afterAll(async () => {
  await app.close()
  await simA.stop()
  await simB.stop()
})

describe('the offer route', () => {
  test('a zero or all-zero-digits price on marketplace_b is 422 at the coin, and Clore is never called', async () => {
    simB.clearRequests()
    const cases: [unknown, string][] = [
      [{ 'USD-Blockchain': { on_demand: '0' } }, '/coin_prices/USD-Blockchain/on_demand'],
      [{ bitcoin: { on_demand: '0.000000000000' } }, '/coin_prices/bitcoin/on_demand'],
      [{ 'USD-Blockchain': { on_demand: '6.5', spot: '0' } }, '/coin_prices/USD-Blockchain/spot'],
      [{ 'USD-Blockchain': { on_demand: '6.5' }, 'CLORE-Blockchain': { on_demand: '0.0' } }, '/coin_prices/CLORE-Blockchain/on_demand'],
    ]
    for (const [coin_prices, path] of cases) {
      const refused = await expectProblem(await send('PUT', `/marketplaces/links/${onB}/marketplace_b/offer`, { coin_prices }), 422, 'validation_failed')
      expect(refused.errors).toEqual([{ path, code: 'too_small' }])
      expect(refused.detail).toContain('above zero')
    }
    expect(writesB()).toEqual([])
  })

  test('on marketplace_a a zero price or a zero minimum bid is 422 at that field, and Vast is never called', async () => {
    simA.clearRequests()
    for (const [body, path] of [
      [{ price_gpu_hour: '0.000000' }, '/price_gpu_hour'],
      [{ price_gpu_hour: '0.40', min_bid_hour: '0' }, '/min_bid_hour'],
    ] as const) {
      const refused = await expectProblem(await send('PUT', `/marketplaces/links/${onA}/marketplace_a/offer`, body), 422, 'validation_failed')
      expect(refused.errors).toEqual([{ path, code: 'too_small' }])
    }
    // A price beyond the money range is the same kind of answer, not a 500.
    const beyond = await expectProblem(
      await send('PUT', `/marketplaces/links/${onA}/marketplace_a/offer`, { price_gpu_hour: '99999999999999999' }),
      422,
      'validation_failed',
    )
    expect(beyond.errors).toEqual([{ path: '/price_gpu_hour', code: 'too_large' }])
    expect(writesA()).toEqual([])
  })

  test('a price above zero is still published, storage and traffic may be free', async () => {
    simA.clearRequests()
    await ok(send('PUT', `/marketplaces/links/${onA}/marketplace_a/offer`, { price_gpu_hour: '0.40', price_inet_up_tb: '0' }))
    expect(writesA().map((w) => w.body)).toEqual([{ machine: 921, price_gpu: 0.4, min_chunk: 1, price_inetu: 0 }])
  })
})

describe('keep-on', () => {
  test('a kept offer with a zero price (stored before the check) is not published again: the sync counts it failed', async () => {
    await ok(send('PUT', `/servers/${onA}/keep-on/marketplace_a`))
    await app.deps.db.run(sql`UPDATE marketplace_links SET offer = ${JSON.stringify({ price_gpu_hour: '0' })} WHERE server_id = ${onA}`)
    simA.updateMachine(921, { listed: false }) // unlisted in Vast's console
    simA.clearRequests()
    await ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: 60 } }))
    const run = await runJob('marketplaces.sync')
    expect(run.detail).toContain('keep-on: 0 re-published, 1 failed')
    expect(writesA()).toEqual([])
    await ok(send('DELETE', `/servers/${onA}/keep-on/marketplace_a`))
  })
})

describe('pricing strategy', () => {
  type Preview = { items: { suggested_price_gpu_hour: string }[]; skipped: { server_id: string; reason: string }[] }
  const policy = { marketplace: 'marketplace_b', target: { server_ids: [] as string[] }, rounding_step: '0.01' }

  test('a policy whose price rounds to zero (no cost known, a market near nothing) suggests nothing and says why', async () => {
    // The median of 0.004, 0.004, 1.00 is 0.004: to the cent, 0.00; the floor is zero with no cost known.
    const preview = await ok<Preview>(send('POST', '/strategy/preview', { ...policy, target: { server_ids: [onB] }, target_percentile: 50 }))
    expect(preview.items).toEqual([])
    expect(preview.skipped).toEqual([{ server_id: onB, reason: expect.stringContaining('the price would be 0.00') }])
    await ok(send('POST', '/strategy/policies', { ...policy, name: 'median', target: { server_ids: [onB] }, target_percentile: 50 }), 201)
    await runJob('strategy.suggest')
    expect((await ok<{ items: unknown[] }>(send('GET', '/strategy/suggestions'))).items).toEqual([])
  })

  test('accepting a suggestion whose offer carries a zero price is refused by the same check before Clore is called', async () => {
    const policies = await ok<{ items: { id: string }[] }>(send('GET', '/strategy/policies'))
    await ok(send('PATCH', `/strategy/policies/${policies.items[0]!.id}`, { target_percentile: 100 }))
    await runJob('strategy.suggest')
    const [made] = (await ok<{ items: { id: string; offer: unknown }[] }>(send('GET', '/strategy/suggestions?state=pending'))).items
    expect(made!.offer).toEqual({ coin_prices: { 'USD-Blockchain': { on_demand: '48' } } })
    // A suggestion stored before the check (or by a bug) with a zero price in its offer.
    await app.deps.db.run(
      sql`UPDATE strategy_suggestions SET offer = ${JSON.stringify({ coin_prices: { 'USD-Blockchain': { on_demand: '0' } } })} WHERE id = ${made!.id}`,
    )
    simB.clearRequests()
    const refused = await expectProblem(await send('POST', `/strategy/suggestions/${made!.id}/accept`), 422, 'validation_failed')
    expect(refused.errors).toEqual([{ path: '/coin_prices/USD-Blockchain/on_demand', code: 'too_small' }])
    expect(writesB()).toEqual([])
    const [still] = (await ok<{ items: { id: string; state: string }[] }>(send('GET', `/strategy/suggestions?state=pending`))).items
    expect(still).toMatchObject({ id: made!.id, state: 'pending' })
  })
})
