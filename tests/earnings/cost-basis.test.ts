import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { addMember, call, insertServer, newTenant, setPlan, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'

/**
 * Issue 18, the cost basis over HTTP: everything null (never zero) until entered, commissions per
 * marketplace and deal currency resolved to the marketplace-wide fallback, the zero commission
 * refused, the operational cost spread over billable managed server-days, defaults and unknowns
 * served, If-Match, Idempotency-Key and the roles.
 */

type Commission = { currency: string; label: string; key: string; percent: string | null; source: string | null }
type CostBasis = {
  currency: string
  electricity_usd_per_kwh: string | null
  operational: { usd_per_month: string | null; spread: { method: string; period: string; billable_server_days: number; usd_per_server_day: string } | null }
  marketplaces: { marketplace: string; commission_percent: string | null; commissions: Commission[]; renter_markup_percent: string | null }[]
  defaults: { key: string; value: string; source: string; reason: string }[]
  rental_revenue: unknown
  unknown: { field: string; reason: string }[]
  version: number
}

let app: TestApp
let owner: Member
let rig1: string
let rig2: string
beforeAll(async () => {
  app = await startTestApp()
  owner = await newTenant(app, 'costs')
  await setPlan(app, owner.tenantId, 'pro')
})
afterAll(() => app.close())

async function get(caller: Member | string = owner): Promise<{ body: CostBasis; etag: string | null }> {
  const res = await call(app, 'GET', '/billing/cost-basis', caller)
  expect(res.status).toBe(200)
  return { body: (await res.json()) as CostBasis, etag: res.headers.get('etag') }
}
const put = (json: unknown, headers: Record<string, string> = {}, caller: Member | string = owner) =>
  call(app, 'PUT', '/billing/cost-basis', caller, { json, headers })
const market = (cb: CostBasis, m: string) => cb.marketplaces.find((x) => x.marketplace === m)!

describe('the cost basis', () => {
  test('before anything is entered every rate is null, never zero; defaults and unknowns are served', async () => {
    const { body, etag } = await get()
    expect(etag).toBe('"0"')
    expect(body).toMatchObject({
      currency: 'USD',
      electricity_usd_per_kwh: null,
      operational: { usd_per_month: null, spread: null },
      rental_revenue: null,
      version: 0,
    })
    expect(market(body, 'marketplace_a')).toEqual({
      marketplace: 'marketplace_a',
      commission_percent: null,
      commissions: [{ currency: 'USD', label: 'US dollar', key: 'marketplaces.marketplace_a.commissions.USD', percent: null, source: null }],
      renter_markup_percent: null,
    })
    expect(market(body, 'marketplace_b').commissions.map((c) => c.currency)).toEqual(['bitcoin', 'CLORE-Blockchain', 'USD-Blockchain'])
    expect(body.defaults.find((d) => d.key === 'marketplaces.marketplace_b.commissions.bitcoin')).toMatchObject({ value: '20' })
    expect(body.defaults.every((d) => d.source && d.reason)).toBe(true)
    const fields = body.unknown.map((u) => u.field)
    expect(fields).toEqual(
      expect.arrayContaining([
        'payback',
        'market_prices',
        'electricity_usd_per_kwh',
        'operational.usd_per_month',
        'marketplaces.marketplace_a.commissions.USD',
      ]),
    )
    // marketplace_b's currencies have published defaults: not unknown.
    expect(fields.some((f) => f.startsWith('marketplaces.marketplace_b'))).toBe(false)
  })

  test('a partial update changes only what it sends; a currency without its own rate resolves to the marketplace-wide one', async () => {
    const res = await put({
      electricity_usd_per_kwh: '0.145',
      marketplaces: {
        marketplace_a: { commission_percent: '25' },
        marketplace_b: { commission_percent: '5', commissions: { bitcoin: '20' }, renter_markup_percent: '10' },
      },
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('"1"')
    const body = (await res.json()) as CostBasis
    expect(body.electricity_usd_per_kwh).toBe('0.145')
    expect(body.operational.usd_per_month).toBeNull()
    expect(market(body, 'marketplace_a').commissions[0]).toMatchObject({ percent: '25', source: 'marketplace' })
    const b = market(body, 'marketplace_b')
    expect(b.renter_markup_percent).toBe('10')
    expect(b.commissions.map((c) => [c.currency, c.percent, c.source])).toEqual([
      ['bitcoin', '20', 'currency'],
      ['CLORE-Blockchain', '5', 'marketplace'],
      ['USD-Blockchain', '5', 'marketplace'],
    ])
    expect(body.unknown.map((u) => u.field)).not.toContain('electricity_usd_per_kwh')
    // null clears one field and leaves the rest.
    const cleared = (await (await put({ marketplaces: { marketplace_b: { commissions: { bitcoin: null } } } })).json()) as CostBasis
    expect(market(cleared, 'marketplace_b').commissions[0]).toMatchObject({ currency: 'bitcoin', percent: '5', source: 'marketplace' })
    expect(cleared.electricity_usd_per_kwh).toBe('0.145')
    expect((await get()).body).toEqual(cleared)
  })

  test('a zero commission, an unknown currency, a negative amount or an unknown field is 422 and changes nothing', async () => {
    const before = (await get()).body
    const cases: [unknown, string, string][] = [
      [{ marketplaces: { marketplace_a: { commission_percent: '0' } } }, '/marketplaces/marketplace_a/commission_percent', 'zero_not_allowed'],
      [{ marketplaces: { marketplace_b: { commissions: { bitcoin: '0.00' } } } }, '/marketplaces/marketplace_b/commissions/bitcoin', 'zero_not_allowed'],
      [{ marketplaces: { marketplace_b: { commissions: { dogecoin: '3' } } } }, '/marketplaces/marketplace_b/commissions/dogecoin', 'unknown_currency'],
      [{ electricity_usd_per_kwh: '-0.1' }, '/electricity_usd_per_kwh', 'too_small'],
      [{ marketplaces: { marketplace_a: { commission_percent: '101' } } }, '', ''],
      [{ electricity: '0.1' }, '', ''],
      [{}, '', ''],
    ]
    for (const [json, path, code] of cases) {
      const res = await put(json)
      expect(res.status).toBe(422)
      const doc = (await res.json()) as { code: string; errors?: { path: string; code: string }[] }
      expect(doc.code).toBe('validation_failed')
      if (code) expect(doc.errors?.[0]).toEqual({ path, code })
    }
    expect((await get()).body).toEqual(before)
  })

  test('the operational cost is spread over billable managed server-days; without servers there is nothing to divide by', async () => {
    const none = (await (await put({ operational: { usd_per_month: '300' } })).json()) as CostBasis
    expect(none.operational).toEqual({ usd_per_month: '300.00', spread: null })
    rig1 = await insertServer(app, owner.tenantId, 'rig-1')
    rig2 = await insertServer(app, owner.tenantId, 'rig-2')
    const { body } = await get()
    const spread = body.operational.spread!
    const now = new Date(app.deps.clock.nowUs() / 1000)
    expect(spread.method).toBe('billable_server_days')
    expect(spread.period).toBe(now.toISOString().slice(0, 7))
    // No charge booked yet: two managed servers for the rest of the month.
    const monthEnd = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)
    const remaining = (monthEnd - now.getTime()) / 86_400_000
    expect(Math.abs(spread.billable_server_days - 2 * remaining)).toBeLessThan(0.05)
    expect(Math.abs(Number(spread.usd_per_server_day) - 300 / spread.billable_server_days)).toBeLessThan(0.001)
  })

  test('If-Match: a stale version is 412 and changes nothing; Idempotency-Key replays', async () => {
    const { etag } = await get()
    const stale = await put({ electricity_usd_per_kwh: '0.2' }, { 'If-Match': '"0"' })
    expect(stale.status).toBe(412)
    const okRes = await put({ electricity_usd_per_kwh: '0.2' }, { 'If-Match': etag! })
    expect(okRes.status).toBe(200)
    const first = await put({ electricity_usd_per_kwh: '0.3' }, { 'Idempotency-Key': 'cost-basis-1' })
    const again = await put({ electricity_usd_per_kwh: '0.3' }, { 'Idempotency-Key': 'cost-basis-1' })
    expect(again.status).toBe(200)
    expect(await again.json()).toEqual(await first.json())
    expect((await get()).body.version).toBe(Number(etag!.replaceAll('"', '')) + 2)
  })

  test('members read it; only an admin or owner (or a token with billing:write) changes it', async () => {
    const viewer = await addMember(app, owner.tenantId, 'viewer')
    const operator = await addMember(app, owner.tenantId, 'operator')
    expect((await get(viewer)).body.electricity_usd_per_kwh).toBe('0.30')
    expect((await put({ electricity_usd_per_kwh: '0.1' }, {}, operator)).status).toBe(403)
    const admin = await addMember(app, owner.tenantId, 'admin')
    expect((await put({ electricity_usd_per_kwh: '0.1' }, {}, admin)).status).toBe(200)
    const stranger = await newTenant(app, 'costs-stranger')
    expect((await get(stranger)).body.electricity_usd_per_kwh).toBeNull()
  })

  test('the margin prices electricity with the fleet tariff × measured GPU power × hours; a server without measurements is null and named', async () => {
    expect((await put({ electricity_usd_per_kwh: '0.20' })).status).toBe(200)
    const HOUR = 3_600_000_000
    const now = app.deps.clock.nowUs()
    const midnight = Math.floor(now / (24 * HOUR)) * 24 * HOUR
    await app.deps.db.run(sql`INSERT INTO metric_series (server_id, gpu_index, metric) VALUES (${rig1}, 0, ${'power_w'})`)
    const series = ((await app.deps.db.get(sql`SELECT id FROM metric_series WHERE server_id = ${rig1}`)) as { id: number }).id
    await app.deps.db.run(
      sql`INSERT INTO metric_rollups (series_id, grain, bucket, min, max, avg, p50, p95, last, samples) VALUES (${series}, 3600, ${midnight}, 500, 500, 500, 500, 500, 500, 12)`,
    )
    const res = await call(app, 'GET', '/reports/margin?days=1', owner)
    expect(res.status).toBe(200)
    type Fig = { server_id: string; electricity_usd: string | null; margin_usd: string; estimate: boolean; missing: string[] }
    const report = (await res.json()) as { servers: Fig[] }
    const one = report.servers.find((x) => x.server_id === rig1)!
    // 0.20 USD/kWh × 0.5 kW × the hours since midnight (real time flows: a wide margin).
    const expected = 0.2 * 0.5 * ((app.deps.clock.nowUs() - midnight) / HOUR)
    expect(Math.abs(Number(one.electricity_usd) - expected)).toBeLessThan(0.01)
    expect(Number(one.margin_usd)).toBeLessThan(0)
    expect(one.missing).not.toContain('power measurements')
    const two = report.servers.find((x) => x.server_id === rig2)!
    expect(two.electricity_usd).toBeNull()
    expect(two.estimate).toBe(true)
    expect(two.missing).toContain('power measurements')
  })
})
