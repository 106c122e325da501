import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { call, insertServer, type Member, newTenant, setPlan } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { vastMarketOffer } from '../support/marketplaces'
import { expectProblem } from '../support/problem'

/**
 * Issue 34, finding 1: one tenant's inputs must not stop a fleet-wide job for everyone after it.
 * Two tenants on Vast (the simulator over real HTTP), the first one's id before the second's (ids
 * are time-ordered, and strategy.suggest walks tenants in id order). The cost basis refuses amounts
 * whose derived prices would leave the money range; a floor that would still leave it (a row stored
 * before the bounds) skips the offer with a reason instead of answering 500 or failing the job; and
 * a tenant whose part of the job fails anyway (a row the code cannot read) is reported, the next
 * tenant still gets its suggestions, and the failing policy waits its cadence instead of failing at
 * every tick.
 */

const KEY_FIRST = 'vast-isolation-first-0123456789ab'
const KEY_SECOND = 'vast-isolation-second-0123456789a'
const MARKET = [0.3, 0.36, 0.42, 0.48, 0.6].map((dph, i) => vastMarketOffer(9301 + i, 'RTX 4090', 1, dph))

let sim: MarketplaceASim
let app: TestApp
let first: Member
let second: Member
let firstServer: string
let secondServer: string

type Run = { outcome: string; detail: string | null }
const runJob = async (job: string): Promise<Run> => {
  const r = await app.fetch(`/api/v1/_test/jobs/${job}/run`, { method: 'POST' })
  const text = await r.text()
  expect({ status: r.status, text }).toMatchObject({ status: 200 })
  return JSON.parse(text) as Run
}
async function ok<T = any>(res: Promise<Response>, status = 200): Promise<T> {
  const r = await res
  const text = await r.text()
  expect({ status: r.status, body: text }).toMatchObject({ status })
  return (text ? JSON.parse(text) : null) as T
}
const advance = (seconds: number) => ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
const suggestionsOf = async (m: Member) => (await ok<{ items: { server_id: string; state: string }[] }>(call(app, 'GET', '/strategy/suggestions', m))).items
const policy = (server: string) => ({
  name: 'median',
  marketplace: 'marketplace_a',
  target: { server_ids: [server] },
  target_percentile: 50,
  cadence_minutes: 60,
})

/** Writes the cost basis row as a database from before the bounds (or a damaged one) may hold it. */
async function storeCostBasis(tenantId: string, operationalMicros: number | null, commission: string): Promise<void> {
  await app.deps.db.run(
    sql`UPDATE cost_bases SET operational_micros_per_month = ${operationalMicros}, marketplaces = ${JSON.stringify({ marketplace_a: { commission, commissions: {}, markup: null } })} WHERE tenant_id = ${tenantId}`,
  )
}

async function tenantOnVast(tag: string, owner: number, key: string, machine: number): Promise<[Member, string]> {
  const m = await newTenant(app, tag)
  await setPlan(app, m.tenantId, 'pro')
  const server = await insertServer(app, m.tenantId, `rig-${tag}`)
  sim.putMachine(owner, machine, { hostname: `rig-${machine}`, listed: true, gpu_name: 'RTX 4090', num_gpus: 2, listed_gpu_cost: 0.5, listed_min_gpu_count: 2 })
  await ok(call(app, 'PUT', '/marketplaces/marketplace_a', m, { json: { api_key: key } }))
  await ok(
    call(app, 'POST', '/marketplaces/links', m, { json: { server_id: server, marketplace: 'marketplace_a', external_machine_id: String(machine) } }),
    201,
  )
  await ok(call(app, 'PUT', '/billing/cost-basis', m, { json: { marketplaces: { marketplace_a: { commission_percent: '25' } } } }))
  return [m, server]
}

beforeAll(async () => {
  sim = await startMarketplaceA({
    rateScale: 0,
    owners: [
      { id: 8101, email: 'first@example.com', keys: [{ key: KEY_FIRST, label: 'first' }] },
      { id: 8102, email: 'second@example.com', keys: [{ key: KEY_SECOND, label: 'second' }] },
    ],
  })
  for (const offer of MARKET) sim.addMarketOffer(offer)
  app = await startTestApp({ MARKETPLACE_A_API_URL: sim.url, SESSION_IDLE_SECONDS: String(30 * 86400), LOG_LEVEL: 'silent' })
  ;[first, firstServer] = await tenantOnVast('first', 8101, KEY_FIRST, 811)
  ;[second, secondServer] = await tenantOnVast('second', 8102, KEY_SECOND, 812)
  // The walk goes in id order: the first tenant's part runs before the second's.
  expect(first.tenantId < second.tenantId).toBe(true)
  expect((await runJob('marketplaces.sync')).outcome).toBe('succeeded')
})
afterAll(async () => {
  await app.close()
  await sim.stop()
})

describe('money inputs are bounded so that derived prices stay in range', () => {
  test("the issue's cost basis is refused at the field that is out of bounds, and nothing changes", async () => {
    const body = { operational: { usd_per_month: '999999999.999999' }, marketplaces: { marketplace_a: { commission_percent: '99.9999' } } }
    const refused = await expectProblem(await call(app, 'PUT', '/billing/cost-basis', first, { json: body }), 422, 'validation_failed')
    expect(refused.errors).toEqual([{ path: '/operational/usd_per_month', code: 'too_large' }])
    const commission = await expectProblem(
      await call(app, 'PUT', '/billing/cost-basis', first, { json: { marketplaces: { marketplace_a: { commission_percent: '99.9999' } } } }),
      422,
      'validation_failed',
    )
    expect(commission.errors).toEqual([{ path: '/marketplaces/marketplace_a/commission_percent', code: 'too_large' }])
    const tariff = await expectProblem(
      await call(app, 'PUT', '/billing/cost-basis', first, { json: { electricity_usd_per_kwh: '10.000001' } }),
      422,
      'validation_failed',
    )
    expect(tariff.errors).toEqual([{ path: '/electricity_usd_per_kwh', code: 'too_large' }])
    const server = await expectProblem(
      await call(app, 'PATCH', `/servers/${firstServer}`, first, { json: { electricity_usd_per_kwh: '11' } }),
      422,
      'validation_failed',
    )
    expect(server.errors).toEqual([{ path: '/electricity_usd_per_kwh', code: 'too_large' }])
    const basis = await ok<{ operational: { usd_per_month: string | null }; marketplaces: { marketplace: string; commission_percent: string | null }[] }>(
      call(app, 'GET', '/billing/cost-basis', first),
    )
    expect(basis.operational.usd_per_month).toBeNull()
    expect(basis.marketplaces.find((m) => m.marketplace === 'marketplace_a')!.commission_percent).toBe('25')
  })

  test('a money input beyond the money range itself is 422 at its field, never a 500', async () => {
    const huge = '99999999999999999'
    const cases: [string, string, unknown, string, string][] = [
      ['PUT', '/billing/cost-basis', { electricity_usd_per_kwh: huge }, '/electricity_usd_per_kwh', 'too_large'],
      ['PUT', '/billing/cost-basis', { operational: { usd_per_month: '1000000000.000001' } }, '/operational/usd_per_month', 'too_large'],
      ['PUT', '/billing/cost-basis', { operational: { usd_per_month: `-${huge}` } }, '/operational/usd_per_month', 'too_small'],
      ['PATCH', `/servers/${firstServer}`, { electricity_usd_per_kwh: huge }, '/electricity_usd_per_kwh', 'too_large'],
      ['POST', '/strategy/preview', { ...policy(firstServer), ceiling_gpu_hour: huge }, '/ceiling_gpu_hour', 'too_large'],
      ['POST', '/strategy/preview', { ...policy(firstServer), rounding_step: huge }, '/rounding_step', 'out_of_range'],
      ['POST', '/strategy/policies', { ...policy(firstServer), ceiling_gpu_hour: huge }, '/ceiling_gpu_hour', 'too_large'],
    ]
    for (const [method, path, json, pointer, code] of cases) {
      const refused = await expectProblem(await call(app, method, path, first, { json }), 422, 'validation_failed')
      expect({ path, errors: refused.errors }).toEqual({ path, errors: [{ path: pointer, code }] })
    }
  })

  test('at the bounds themselves the preview prices the offer inside the money range', async () => {
    await ok(
      call(app, 'PUT', '/billing/cost-basis', first, {
        json: { electricity_usd_per_kwh: '10', operational: { usd_per_month: '10000000' }, marketplaces: { marketplace_a: { commission_percent: '90' } } },
      }),
    )
    const preview = await ok<{ items: { suggested_price_gpu_hour: string; floor: { price_gpu_hour: string } }[]; skipped: unknown[] }>(
      call(app, 'POST', '/strategy/preview', first, { json: policy(firstServer) }),
    )
    expect(preview.items).toHaveLength(1)
    expect(Number(preview.items[0]!.floor.price_gpu_hour)).toBeLessThanOrEqual(1_000_000_000)
    expect(preview.items[0]!.suggested_price_gpu_hour).toMatch(/^[0-9]+\.[0-9]{2,6}$/)
    await ok(call(app, 'PUT', '/billing/cost-basis', first, { json: { electricity_usd_per_kwh: null, operational: { usd_per_month: null } } }))
  })

  test('a floor above the money range from a row stored before the bounds is skipped with its reason, never a 500', async () => {
    await storeCostBasis(first.tenantId, 999_999_999_999_999, '99.9999')
    const preview = await ok<{ items: unknown[]; skipped: { server_id: string; reason: string }[] }>(
      call(app, 'POST', '/strategy/preview', first, { json: policy(firstServer) }),
    )
    expect(preview.items).toEqual([])
    expect(preview.skipped).toEqual([{ server_id: firstServer, reason: expect.stringContaining('the largest price gpuhq handles') }])
    await ok(call(app, 'GET', '/billing/cost-basis', first))
  })
})

describe('strategy.suggest isolates tenants', () => {
  test("the first tenant's out-of-range floor costs nobody after it their suggestions", async () => {
    await ok(call(app, 'POST', '/strategy/policies', first, { json: policy(firstServer) }), 201)
    await ok(call(app, 'POST', '/strategy/policies', second, { json: policy(secondServer) }), 201)
    const run = await runJob('strategy.suggest')
    expect(run.outcome).toBe('succeeded')
    expect(await suggestionsOf(first)).toEqual([])
    expect((await suggestionsOf(second)).map((s) => [s.server_id, s.state])).toEqual([[secondServer, 'pending']])
  })

  test('a tenant whose part fails is reported and backs off; the tenant after it still gets its suggestions', async () => {
    // A row the code cannot read: the commission is no percentage at all.
    await storeCostBasis(first.tenantId, null, 'garbage')
    await advance(3700)
    expect((await runJob('marketplaces.sync')).outcome).toBe('succeeded')
    // The second tenant moves its policy to the cheapest ask (0.30): this run owes it a new suggestion.
    const [theirs] = (await ok<{ items: { id: string }[] }>(call(app, 'GET', '/strategy/policies', second))).items
    await ok(call(app, 'PATCH', `/strategy/policies/${theirs!.id}`, second, { json: { target_percentile: 0 } }))
    const run = await runJob('strategy.suggest')
    expect(run.outcome).toBe('partial')
    expect(run.detail).toContain('2 policies looked at, 1 suggestions made')
    expect(run.detail).toContain(`1 tenants failed: ${first.tenantId} (policy `)
    expect(run.detail).toContain('not a percent: garbage')
    const pending = (
      await ok<{ items: { server_id: string; suggested_price_gpu_hour: string }[] }>(call(app, 'GET', '/strategy/suggestions?state=pending', second))
    ).items
    expect(pending.map((s) => [s.server_id, s.suggested_price_gpu_hour])).toEqual([[secondServer, '0.30']])

    // The next ticks do not try the failing policy again: it waits its cadence like one that ran.
    await advance(300)
    const next = await runJob('strategy.suggest')
    expect(next).toMatchObject({ outcome: 'succeeded', detail: expect.stringContaining('0 policies looked at') })
    const policies = await ok<{ items: { last_run_at: string | null }[] }>(call(app, 'GET', '/strategy/policies', first))
    expect(policies.items[0]!.last_run_at).not.toBeNull()

    // Once its cadence has come it is tried again, and fails again, alone.
    await advance(3600)
    const later = await runJob('strategy.suggest')
    expect(later.outcome).toBe('partial')
    expect(later.detail).toContain(`1 tenants failed: ${first.tenantId}`)
    const runs = (await app.deps.db.all(sql`SELECT outcome FROM job_runs WHERE job = 'strategy.suggest' ORDER BY started_at`)) as { outcome: string }[]
    expect(runs.map((r) => r.outcome).slice(-3)).toEqual(['partial', 'succeeded', 'partial'])
  })
})
