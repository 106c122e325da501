import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { call, insertServer, mintPat, newTenant, setPlan, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { micros } from '../support/wire'
import { addDays, csvRecords, report, sumBy, UNLIMITED_REPORTS } from './support'

/**
 * Issue 21, "Done when": the earnings report's figures match the accrual rows it summarises. Three
 * rigs earn for several UTC days through the marketplace simulators (two RTX 4090 machines on
 * marketplace_a, whose own after-cut figure is read beside the accrual, and an RTX 3090 on
 * marketplace_b paid in CLORE), with sync outages that leave gaps. Every expected figure is
 * computed here from the earnings_days rows themselves and compared to the micro-dollar.
 */

const KEY_A = 'vast-report-key-0123456789abcdef'
const KEY_B = 'clore-report-key-5f2e9a17c3'
const VAST_OWNER = 7272
const US = 1_000_000
const DAY_US = 86_400 * US

type Figures = { earned_usd: string; platform_reported_usd: string | null; accrued_seconds: number; accrual_gap_seconds: number }
type ByMarketplace = Figures & { marketplace: string; servers: number }
type ByModel = Figures & { gpu_model: string; servers: number }
type Earnings = {
  report: 'earnings'
  from: string
  to: string
  days: number
  group_by: string
  timezone: string
  total: Figures
  periods: (Figures & { period: string; from: string; to: string; by_marketplace: ByMarketplace[]; by_gpu_model: ByModel[] })[]
  by_marketplace: ByMarketplace[]
  by_gpu_model: ByModel[]
  servers: (Figures & { server_id: string; name: string; gpu_model: string | null })[]
  total_label: string
}
type Row = {
  server_id: string
  marketplace: string
  day: string
  accrued_usd_micros: number
  accrued_us: number
  gap_us: number
  platform_usd_micros: number | null
}

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Member
let rigA: string
let rigB: string
let rigC: string
let firstDay: string
let today: string

const job = async (name: string) => {
  const res = await app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' })
  expect(((await res.json()) as { outcome: string }).outcome).toBe('succeeded')
}
const advance = async (seconds: number) =>
  expect((await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } })).status).toBe(200)
const setModel = async (id: string, model: string, gpus: number) =>
  await app.deps.db.run(sql`UPDATE servers SET gpu_model = ${model}, gpu_count = ${gpus} WHERE id = ${id}`)
const link = async (server_id: string, marketplace: string, external_machine_id: string) =>
  expect((await call(app, 'POST', '/marketplaces/links', owner, { json: { server_id, marketplace, external_machine_id } })).status).toBe(201)

beforeAll(async () => {
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: VAST_OWNER, email: 'host@example.com', keys: [{ key: KEY_A, label: 'report' }] }] })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    currencyRatesInUsd: { bitcoin: 60000, 'CLORE-Blockchain': 0.0025, 'USD-Blockchain': 1 },
    owners: {
      [KEY_B]: {
        label: 'alice',
        userId: 5,
        servers: [
          {
            name: 'rig-b',
            id: 61,
            online: true,
            visibility: 'public',
            specs: { gpu: '1x NVIDIA GeForce RTX 3090' },
            pricing: { 'CLORE-Blockchain': 2000 },
            rentals: [{ id: 901, spot: true, currency: 'CLORE-Blockchain', price: 1440, renter: 'clore-renter-key-xyz' }],
          },
        ],
      },
    },
  })
  app = await startTestApp({ ...UNLIMITED_REPORTS, LOG_LEVEL: 'silent', MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url })
  owner = await newTenant(app, 'report-earnings')
  await setPlan(app, owner.tenantId, 'pro')
  rigA = await insertServer(app, owner.tenantId, 'rig-a')
  rigB = await insertServer(app, owner.tenantId, 'rig-b')
  rigC = await insertServer(app, owner.tenantId, 'rig-c')
  // What the agents' hello would have reported.
  await setModel(rigA, 'NVIDIA GeForce RTX 4090', 2)
  await setModel(rigC, 'NVIDIA GeForce RTX 4090', 1)
  await setModel(rigB, 'NVIDIA GeForce RTX 3090', 1)
  simA.putMachine(VAST_OWNER, 801, { hostname: 'rig-801', listed: true, num_gpus: 2, gpu_name: 'RTX 4090', listed_gpu_cost: 0.5 })
  simA.addRental(801, { kind: 'on_demand', gpus: 2, running: true })
  simA.putMachine(VAST_OWNER, 802, { hostname: 'rig-802', listed: true, num_gpus: 1, gpu_name: 'RTX 4090', listed_gpu_cost: 0.35 })
  simA.addRental(802, { kind: 'on_demand', gpus: 1, running: true })
  // Vast's own figures after its cut, for the days ahead (and one day only the platform reported).
  const dayIndex = Math.floor(app.deps.clock.nowUs() / DAY_US)
  for (let d = dayIndex - 1; d <= dayIndex + 5; d++)
    simA.addEarnings(VAST_OWNER, [
      { machine_id: 801, day: d, gpu_earn: 9.5 + d - dayIndex, sto_earn: 0.25, bwu_earn: 0, bwd_earn: 0.013 },
      { machine_id: 802, day: d, gpu_earn: 3.125, sto_earn: 0, bwu_earn: 0.5, bwd_earn: 0 },
    ])
  expect((await call(app, 'PUT', '/marketplaces/marketplace_a', owner, { json: { api_key: KEY_A } })).status).toBe(200)
  expect((await call(app, 'PUT', '/marketplaces/marketplace_b', owner, { json: { api_key: KEY_B } })).status).toBe(200)
  await link(rigA, 'marketplace_a', '801')
  await link(rigC, 'marketplace_a', '802')
  await link(rigB, 'marketplace_b', '61')
  // Three days and a half of samples every 5 h, most right after a sync (the deals seen run on);
  // every third finds the sync silent for 5 h, past its 15-minute cap: the rest is a gap. Samples
  // across midnight split the accrual between the two days.
  for (let i = 0; i < 17; i++) {
    if (i % 3 !== 2) await job('marketplaces.sync')
    await job('earnings.sample')
    await advance(10 * 60)
    await job('marketplaces.sync')
    await job('earnings.sample')
    await advance(5 * 3600)
  }
  const days = ((await app.deps.db.get(sql`SELECT min(day) AS first FROM earnings_days WHERE tenant_id = ${owner.tenantId}`)) as { first: string }).first
  firstDay = days
  today = new Date(Math.floor(app.deps.clock.nowUs() / 1000)).toISOString().slice(0, 10)
})
afterAll(async () => {
  await app.close()
  await simA.stop()
  await simB.stop()
})

/** The tenant's accrual rows with days in [from, to], straight from the table the report sums. */
const rowsBetween = async (from: string, to: string) =>
  (await app.deps.db.all(
    sql`SELECT server_id, marketplace, day, accrued_usd_micros, accrued_us, gap_us, platform_usd_micros FROM earnings_days WHERE tenant_id = ${owner.tenantId} AND day >= ${from} AND day <= ${to}`,
  )) as Row[]

/** The figures of some rows, from the rows alone. */
function expected(rows: Row[]) {
  const reported = rows.filter((r) => r.marketplace === 'marketplace_a' && r.platform_usd_micros !== null)
  return {
    earned: rows.reduce((n, r) => n + r.accrued_usd_micros, 0),
    platform: reported.length ? reported.reduce((n, r) => n + r.platform_usd_micros!, 0) : null,
    accrued_seconds: Math.floor(rows.reduce((n, r) => n + r.accrued_us, 0) / US),
    gap_seconds: Math.floor(rows.reduce((n, r) => n + r.gap_us, 0) / US),
  }
}
const got = (f: Figures) => ({
  earned: micros(f.earned_usd),
  platform: f.platform_reported_usd === null ? null : micros(f.platform_reported_usd),
  accrued_seconds: f.accrued_seconds,
  gap_seconds: f.accrual_gap_seconds,
})
const modelOf = (id: string) => (id === rigB ? 'NVIDIA GeForce RTX 3090' : 'NVIDIA GeForce RTX 4090')

describe('the earnings report', () => {
  test('matches the accrual rows it summarises to the micro-dollar: in total, per day, marketplace, GPU model and server', async () => {
    const from = addDays(firstDay, -1)
    const { body } = await report<Earnings>(app, owner, 'earnings', `from=${from}&to=${today}`)
    expect(body).toMatchObject({ report: 'earnings', from, to: today, group_by: 'day', timezone: 'UTC' })
    expect(body.total_label).toContain('not a ledger')
    const rows = await rowsBetween(from, today)
    // The seeding gave what the report must cover: several days, both marketplaces, gaps and the platform's figure.
    expect(new Set(rows.map((r) => r.day)).size).toBeGreaterThanOrEqual(4)
    expect(rows.some((r) => r.gap_us > 0)).toBe(true)
    expect(rows.some((r) => r.platform_usd_micros !== null)).toBe(true)

    expect(got(body.total)).toEqual(expected(rows))
    expect(body.periods.map((p) => p.period)).toEqual(Array.from({ length: body.days }, (_, i) => addDays(from, i)))
    expect(got(body.periods[0]!)).toEqual({ earned: 0, platform: null, accrued_seconds: 0, gap_seconds: 0 })
    for (const p of body.periods) {
      const mine = rows.filter((r) => r.day === p.period)
      expect({ day: p.period, ...got(p) }).toEqual({ day: p.period, ...expected(mine) })
      for (const m of p.by_marketplace) {
        const of = mine.filter((r) => r.marketplace === m.marketplace)
        expect({ day: p.period, m: m.marketplace, servers: m.servers, ...got(m) }).toEqual({
          day: p.period,
          m: m.marketplace,
          servers: new Set(of.map((r) => r.server_id)).size,
          ...expected(of),
        })
      }
      for (const g of p.by_gpu_model) expect(got(g)).toEqual(expected(mine.filter((r) => modelOf(r.server_id) === g.gpu_model)))
    }
    expect(body.by_marketplace.map((m) => m.marketplace)).toEqual(['marketplace_a', 'marketplace_b'])
    for (const m of body.by_marketplace) expect(got(m)).toEqual(expected(rows.filter((r) => r.marketplace === m.marketplace)))
    // marketplace_b publishes no earnings: its platform figure is unknown, never zero.
    expect(body.by_marketplace[1]!.platform_reported_usd).toBeNull()
    expect(body.by_gpu_model.map((g) => [g.gpu_model, g.servers])).toEqual([
      ['NVIDIA GeForce RTX 3090', 1],
      ['NVIDIA GeForce RTX 4090', 2],
    ])
    for (const g of body.by_gpu_model) expect(got(g)).toEqual(expected(rows.filter((r) => modelOf(r.server_id) === g.gpu_model)))
    expect(body.servers.map((s) => s.name)).toEqual(['rig-a', 'rig-b', 'rig-c'])
    for (const s of body.servers)
      expect({ id: s.server_id, ...got(s) }).toEqual({ id: s.server_id, ...expected(rows.filter((r) => r.server_id === s.server_id)) })
  })

  test("agrees with GET /marketplaces/earnings: each server's accrual and the platform's own figures", async () => {
    const listed = (await (await call(app, 'GET', '/marketplaces/earnings?days=90', owner)).json()) as {
      items: { day: string; server_id: string; earn_usd_accrued: string; earn_usd_day: string | null }[]
    }
    const { body } = await report<Earnings>(app, owner, 'earnings', `from=${firstDay}&to=${today}`)
    const byServer = sumBy(
      listed.items,
      (r) => r.server_id,
      (r) => micros(r.earn_usd_accrued),
    )
    for (const s of body.servers) expect(micros(s.earned_usd)).toBe(byServer.get(s.server_id)!)
    const platform = listed.items.filter((r) => r.earn_usd_day !== null).reduce((n, r) => n + micros(r.earn_usd_day!), 0)
    expect(micros(body.total.platform_reported_usd!)).toBe(platform)
  })

  test('weeks and months add up to the days they hold', async () => {
    const from = addDays(today, -40)
    const days = (await report<Earnings>(app, owner, 'earnings', `from=${from}&to=${today}`)).body
    for (const groupBy of ['week', 'month']) {
      const grouped = (await report<Earnings>(app, owner, 'earnings', `from=${from}&to=${today}&group_by=${groupBy}`)).body
      expect(grouped.total).toEqual(days.total)
      for (const p of grouped.periods) {
        const inside = days.periods.filter((d) => d.period >= p.from && d.period <= p.to)
        expect(micros(p.earned_usd)).toBe(inside.reduce((n, d) => n + micros(d.earned_usd), 0))
      }
      expect(grouped.periods.reduce((n, p) => n + micros(p.earned_usd), 0)).toBe(micros(days.total.earned_usd))
    }
  })

  test('as CSV: one row per period, server and marketplace with earnings, adding up to the JSON', async () => {
    const { res, text } = await report<string>(app, owner, 'earnings', `from=${firstDay}&to=${today}`, 200, { accept: 'text/csv' })
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(text.split('\r\n')[0]).toBe(
      'period,period_from,period_to,server_id,server_name,gpu_model,marketplace,earned_usd,platform_reported_usd,accrued_seconds,accrual_gap_seconds',
    )
    const records = csvRecords(text)
    const rows = await rowsBetween(firstDay, today)
    expect(records.length).toBe(rows.length)
    for (const r of rows) {
      const line = records.find((c) => c.period === r.day && c.server_id === r.server_id && c.marketplace === r.marketplace)!
      expect(micros(line.earned_usd)).toBe(r.accrued_usd_micros)
      expect(line.gpu_model).toBe(modelOf(r.server_id))
      if (r.platform_usd_micros === null || r.marketplace === 'marketplace_b') expect(line.platform_reported_usd).toBe('')
      else expect(micros(line.platform_reported_usd)).toBe(r.platform_usd_micros)
    }
  })

  test('a token limited to one server sees only that server’s rows, and nothing of the others', async () => {
    const pat = (await mintPat(app, owner, { scopes: ['marketplaces:read'], server_allowlist: [rigB] })).token
    const { body, text } = await report<Earnings>(app, pat, 'earnings', `from=${firstDay}&to=${today}`)
    expect(body.servers.map((s) => s.server_id)).toEqual([rigB])
    expect(got(body.total)).toEqual(expected((await rowsBetween(firstDay, today)).filter((r) => r.server_id === rigB)))
    expect(body.by_gpu_model.map((g) => g.gpu_model)).toEqual(['NVIDIA GeForce RTX 3090'])
    expect(text).not.toContain(rigA)
    expect(text).not.toContain(rigC)
    const csv = (await report<string>(app, pat, 'earnings', `from=${firstDay}&to=${today}&format=csv`)).text
    expect(csv).not.toContain(rigA)
    expect(csvRecords(csv).every((r) => r.server_id === rigB)).toBe(true)
  })

  test('another tenant asking for the same range gets its own, empty, report', async () => {
    const stranger = await newTenant(app, 'report-earnings-stranger')
    const { body } = await report<Earnings>(app, stranger, 'earnings', `from=${firstDay}&to=${today}`)
    expect(body.servers).toEqual([])
    expect(body.total).toEqual({ earned_usd: '0.00', platform_reported_usd: null, accrued_seconds: 0, accrual_gap_seconds: 0 })
  })
})
