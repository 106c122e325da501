import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { utcDay } from '../../src/platform/time'
import { call, insertServer, mintPat, newTenant, setPlan, type Caller, type Member } from '../support/access'
import { startEarlyInUtcDay, startTestApp, type TestApp } from '../support/app'

/**
 * Issue 18, earnings over HTTP against rentals the simulators report: a Vast machine rented on
 * demand (price × cards × time, before Vast's cut) beside Vast's own machine-earnings figure, a
 * Clore server running a spot deal paid in CLORE (the coin amount and its USD at the rate the sync
 * read), a sync outage past the cap reported as a gap, a day split at midnight UTC, a rerun that
 * accrues nothing, the window, the rates and the allowlist.
 */

const KEY_A = 'vast-earnings-key-0123456789abcdef'
const KEY_B = 'clore-earnings-key-5f2e9a17c3'
const VAST_OWNER = 7171
const US = 1_000_000
const DAY_US = 86_400 * US

type Row = {
  day: string
  server_id: string
  marketplace: string
  earn_usd_day: string | null
  earn_usd_accrued: string
  accrued_seconds: number
  accrual_gap_seconds: number
  samples: number
  by_currency: { currency: string; amount: string; usd: string }[]
}
type Earnings = {
  days: number
  items: Row[]
  collected_since: string | null
  accrued_since: string | null
  current_rates: { marketplace: string; currency: string; usd_per_coin: string; observed_at: string | null }[]
  total_label: string
}

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Member
let sA: string
let sB: string

beforeAll(async () => {
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: VAST_OWNER, email: 'host@example.com', keys: [{ key: KEY_A, label: 'earn' }] }] })
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
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url })
  await startEarlyInUtcDay(app) // these tests read "today's" row while they move the clock on (the midnight test picks its own)
  owner = await newTenant(app, 'earnings')
  await setPlan(app, owner.tenantId, 'pro')
  sA = await insertServer(app, owner.tenantId, 'rig-a')
  sB = await insertServer(app, owner.tenantId, 'rig-b')
  // Two cards listed at 0.50 USD per GPU-hour, both rented on demand: 24 USD a day.
  simA.putMachine(VAST_OWNER, 801, { hostname: 'rig-801', listed: true, num_gpus: 2, gpu_name: 'RTX 4090', listed_gpu_cost: 0.5 })
  simA.addRental(801, { kind: 'on_demand', gpus: 2, running: true })
  const today = Math.floor(app.deps.clock.nowUs() / DAY_US)
  simA.addEarnings(VAST_OWNER, [
    { machine_id: 801, day: today, gpu_earn: 1.5, sto_earn: 0.25, bwu_earn: 0, bwd_earn: 0.01 },
    { machine_id: 801, day: today - 1, gpu_earn: 20, sto_earn: 0, bwu_earn: 0, bwd_earn: 0 },
  ])
  expect((await call(app, 'PUT', '/marketplaces/marketplace_a', owner, { json: { api_key: KEY_A } })).status).toBe(200)
  expect((await call(app, 'PUT', '/marketplaces/marketplace_b', owner, { json: { api_key: KEY_B } })).status).toBe(200)
  expect(
    (await call(app, 'POST', '/marketplaces/links', owner, { json: { server_id: sA, marketplace: 'marketplace_a', external_machine_id: '801' } })).status,
  ).toBe(201)
  expect(
    (await call(app, 'POST', '/marketplaces/links', owner, { json: { server_id: sB, marketplace: 'marketplace_b', external_machine_id: '61' } })).status,
  ).toBe(201)
})
afterAll(async () => {
  await app.close()
  await simA.stop()
  await simB.stop()
})

async function job(name: string): Promise<string> {
  const res = await app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' })
  const body = (await res.json()) as { outcome: string; detail: string }
  expect(body.outcome).toBe('succeeded')
  return body.detail
}
const clock = async (json: Record<string, unknown>) => expect((await app.fetch('/api/v1/_test/clock', { method: 'POST', json })).status).toBe(200)
async function earnings(caller: Caller = owner, qs = ''): Promise<Earnings> {
  const res = await call(app, 'GET', `/marketplaces/earnings${qs}`, caller)
  expect(res.status).toBe(200)
  return (await res.json()) as Earnings
}
const rowOf = (e: Earnings, server: string, day = utcDay(app.deps.clock.nowUs())) => e.items.find((r) => r.server_id === server && r.day === day)!
const usd = (s: string) => Number(s)

describe('accrual from running deals', () => {
  test('nothing is on record before the first sample', async () => {
    const e = await earnings()
    expect(e).toMatchObject({ days: 7, items: [], collected_since: null, accrued_since: null })
    expect(e.total_label).toContain('marketplace')
  })

  test('an hour of two rented cards at 0.50 accrues about 1 USD; the Clore spot deal accrues CLORE and its USD at 0.0025', async () => {
    await job('marketplaces.sync')
    await job('earnings.sample')
    const before = await earnings()
    await clock({ advance_seconds: 3600 - 60 })
    await job('marketplaces.sync')
    await clock({ advance_seconds: 60 })
    await job('earnings.sample')
    const e = await earnings()
    const a = rowOf(e, sA)
    const a0 = rowOf(before, sA)
    const hours = (a.accrued_seconds - (a0?.accrued_seconds ?? 0)) / 3600
    expect(hours).toBeGreaterThanOrEqual(1)
    expect(hours).toBeLessThan(1.1)
    // 24 USD a day: 1 USD an hour, to the micro-dollar's rounding.
    // accrued_seconds is floored to the second: the money may hold up to one more second's worth.
    expect(usd(a.earn_usd_accrued) - a.accrued_seconds / 3600).toBeGreaterThanOrEqual(-0.000001)
    expect(usd(a.earn_usd_accrued) - a.accrued_seconds / 3600).toBeLessThan(1 / 3600 + 0.000001)
    expect(a).toMatchObject({ marketplace: 'marketplace_a', accrual_gap_seconds: 0 })
    expect(a.by_currency).toEqual([{ currency: 'USD', amount: expect.any(String), usd: a.earn_usd_accrued }])
    expect(a.samples).toBeGreaterThanOrEqual(2)

    const b = rowOf(e, sB)
    // 1440 CLORE a day: 1 CLORE a minute, 0.0025 USD each.
    const clore = b.by_currency.find((c) => c.currency === 'CLORE-Blockchain')!
    const minutes = b.accrued_seconds / 60
    expect(Number(clore.amount) - minutes).toBeGreaterThanOrEqual(0)
    expect(Number(clore.amount) - minutes).toBeLessThan(1 / 60 + 1e-9)
    // USD at 0.0025 per CLORE, to the micro-dollar.
    expect(Math.abs(usd(clore.usd) - Number(clore.amount) * 0.0025)).toBeLessThanOrEqual(0.000001)
    expect(b.earn_usd_accrued).toBe(clore.usd)
    expect(b.earn_usd_day).toBeNull()
    expect(e.accrued_since).toBe(utcDay(app.deps.clock.nowUs()))
  })

  test("marketplace_a's own figure after its cut is earn_usd_day, from machine-earnings per machine and day", async () => {
    const e = await earnings()
    const today = utcDay(app.deps.clock.nowUs())
    expect(rowOf(e, sA, today).earn_usd_day).toBe('1.76')
    const yesterday = e.items.find((r) => r.server_id === sA && r.day < today)
    expect(yesterday).toMatchObject({ earn_usd_day: '20.00', earn_usd_accrued: '0.00', accrued_seconds: 0, samples: 1, by_currency: [] })
    // accrued_since ignores a day only the report wrote; collected_since does not.
    expect(e.collected_since).toBe(yesterday!.day)
    expect(e.accrued_since).toBe(today)
  })

  test('a rerun right away accrues only the moments since, never the hour again', async () => {
    const before = rowOf(await earnings(), sA)
    await job('earnings.sample')
    const after = rowOf(await earnings(), sA)
    expect(after.accrued_seconds - before.accrued_seconds).toBeLessThanOrEqual(2)
    expect(usd(after.earn_usd_accrued) - usd(before.earn_usd_accrued)).toBeLessThan(0.001)
  })

  test('when the sync stays silent past its 15-minute cap, the rest of a known-running deal is a gap, not accrual', async () => {
    await job('marketplaces.sync')
    await job('earnings.sample')
    const before = rowOf(await earnings(), sA)
    await simA.setMode('unreachable')
    await simB.setMode('unreachable')
    try {
      await clock({ advance_seconds: 40 * 60 })
      await job('marketplaces.sync')
      await job('earnings.sample')
    } finally {
      await simA.setMode('ok')
      await simB.setMode('ok')
    }
    const after = rowOf(await earnings(), sA)
    const accrued = after.accrued_seconds - before.accrued_seconds
    const gap = after.accrual_gap_seconds - before.accrual_gap_seconds
    // Real time keeps flowing between the calls: a wide margin so a loaded machine cannot decide it.
    expect(accrued).toBeGreaterThanOrEqual(15 * 60 - 60)
    expect(accrued).toBeLessThanOrEqual(15 * 60 + 1)
    expect(gap).toBeGreaterThanOrEqual(25 * 60 - 1)
    expect(gap).toBeLessThanOrEqual(25 * 60 + 120)
  })

  test('a sample across midnight UTC accrues each day its own share', async () => {
    // The first midnight with ten minutes of the day before still ahead: the clock starts at the real
    // time and the tests before moved it on, so the coming midnight may be too close (or past).
    const now = app.deps.clock.nowUs()
    const midnight = (Math.floor((now + 11 * 60 * US) / DAY_US) + 1) * DAY_US
    await clock({ now: new Date((midnight - 10 * 60 * US) / 1000).toISOString() })
    await job('marketplaces.sync')
    await job('earnings.sample')
    const lateBefore = rowOf(await earnings(), sA, utcDay(midnight - 1))
    await clock({ advance_seconds: 20 * 60 })
    await job('marketplaces.sync')
    await job('earnings.sample')
    const e = await earnings()
    const late = rowOf(e, sA, utcDay(midnight - 1))
    const early = rowOf(e, sA, utcDay(midnight))
    // The late day gets what ran before midnight, the early day what ran after (wide margins for real time).
    expect(late.accrued_seconds - lateBefore.accrued_seconds).toBeGreaterThanOrEqual(10 * 60 - 60)
    expect(late.accrued_seconds - lateBefore.accrued_seconds).toBeLessThanOrEqual(10 * 60 + 1)
    expect(early.accrued_seconds).toBeGreaterThanOrEqual(10 * 60)
    expect(early.accrued_seconds).toBeLessThanOrEqual(10 * 60 + 120)
    expect(early.samples).toBe(1)
  })
})

describe('rental revenue in the cost basis', () => {
  test("today and month to date are the accrual's, per marketplace", async () => {
    const today = utcDay(app.deps.clock.nowUs())
    const rows = (await earnings(owner, '?days=90')).items
    const micros = (s: string) => Math.round(Number(s) * 1e6)
    const sum = (rs: Row[]) => rs.reduce((n, r) => n + micros(r.earn_usd_accrued), 0)
    const res = await call(app, 'GET', '/billing/cost-basis', owner)
    const revenue = (
      (await res.json()) as {
        rental_revenue: { source: string; today_usd: string; mtd_usd: string; by_marketplace: { marketplace: string; today_usd: string }[] }
      }
    ).rental_revenue
    expect(revenue.source).toBe('marketplace_accrual')
    expect(micros(revenue.today_usd)).toBe(sum(rows.filter((r) => r.day === today)))
    expect(micros(revenue.mtd_usd)).toBe(sum(rows.filter((r) => r.day.slice(0, 7) === today.slice(0, 7))))
    const b = revenue.by_marketplace.find((m) => m.marketplace === 'marketplace_b')!
    expect(micros(b.today_usd)).toBe(sum(rows.filter((r) => r.day === today && r.marketplace === 'marketplace_b')))
  })
})

describe('margin', () => {
  type Figures = {
    earned_usd: string
    platform_cut_usd: string | null
    electricity_usd: string | null
    gpuhq_charges_usd: string
    margin_usd: string
    estimate: boolean
    missing: string[]
  }
  const micros = (s: string) => Math.round(Number(s) * 1e6)

  test('per server: accrued earnings minus the cut (entered, else the published default) minus electricity and charges, labelled where an input is missing', async () => {
    expect((await call(app, 'PUT', '/billing/cost-basis', owner, { json: { marketplaces: { marketplace_a: { commission_percent: '25' } } } })).status).toBe(200)
    const rows = (await earnings(owner, '?days=90')).items
    const res = await call(app, 'GET', '/reports/margin?days=90', owner)
    expect(res.status).toBe(200)
    const report = (await res.json()) as {
      fleet: Figures
      servers: (Figures & { server_id: string })[]
      gpu_models: (Figures & { gpu_model: string; servers: number })[]
    }
    const of = (id: string) => report.servers.find((s) => s.server_id === id)!
    const earnedA = rows.filter((r) => r.server_id === sA).reduce((n, r) => n + micros(r.earn_usd_accrued), 0)
    const a = of(sA)
    expect(micros(a.earned_usd)).toBe(earnedA)
    expect(Math.abs(micros(a.platform_cut_usd!) - earnedA * 0.25)).toBeLessThanOrEqual(1)
    // No tariff anywhere: electricity is unknown (null) and named, not shown as zero.
    expect(a.electricity_usd).toBeNull()
    expect(a.estimate).toBe(true)
    expect(a.missing).toContain('electricity tariff')
    expect(a.missing.some((m) => m.startsWith('commission marketplace_a'))).toBe(false)
    expect(micros(a.margin_usd)).toBe(micros(a.earned_usd) - micros(a.platform_cut_usd!) - micros(a.gpuhq_charges_usd))
    const b = of(sB)
    const earnedB = rows.filter((r) => r.server_id === sB).reduce((n, r) => n + micros(r.earn_usd_accrued), 0)
    // CLORE's published default (5 %), named as such.
    expect(Math.abs(micros(b.platform_cut_usd!) - earnedB * 0.05)).toBeLessThanOrEqual(1)
    expect(b.missing).toContain('commission marketplace_b CLORE-Blockchain (published default used)')
    expect(micros(report.fleet.earned_usd)).toBe(earnedA + earnedB)
    expect(report.gpu_models.reduce((n, m) => n + m.servers, 0)).toBe(report.servers.length)
  })

  test("GET /servers/{id} shows the server's last 7 days' margin to whoever may read billing, not to a token limited to servers", async () => {
    const res = await call(app, 'GET', `/servers/${sA}`, owner)
    const detail = (await res.json()) as { margin?: Figures & { days: number } }
    expect(detail.margin?.days).toBe(7)
    expect(detail.margin?.estimate).toBe(true)
    const pat = (await mintPat(app, owner, { scopes: ['servers:read'], server_allowlist: [sA] })).token
    const limited = (await (await call(app, 'GET', `/servers/${sA}`, pat)).json()) as { margin?: unknown }
    expect('margin' in limited).toBe(false)
  })
})

describe('reading', () => {
  test('days is 1..90 (default 7) and inclusive of today', async () => {
    const one = await earnings(owner, '?days=1')
    const today = utcDay(app.deps.clock.nowUs())
    expect(one.days).toBe(1)
    expect(one.items.length).toBeGreaterThan(0)
    expect(one.items.every((r) => r.day === today)).toBe(true)
    expect((await earnings(owner, '?days=90')).items.length).toBeGreaterThan(one.items.length)
    for (const bad of ['?days=0', '?days=91', '?days=x']) {
      const res = await call(app, 'GET', `/marketplaces/earnings${bad}`, owner)
      expect(res.status).toBe(422)
    }
  })

  test('current_rates: the dollar with no observation time, and the coins marketplace_b last published', async () => {
    const rates = (await earnings()).current_rates
    expect(rates[0]).toEqual({ marketplace: 'marketplace_a', currency: 'USD', usd_per_coin: '1', observed_at: null })
    const clore = rates.find((r) => r.currency === 'CLORE-Blockchain')!
    expect(clore).toMatchObject({ marketplace: 'marketplace_b', usd_per_coin: '0.0025' })
    expect(clore.observed_at).not.toBeNull()
  })

  test('rows are newest day first; a token limited to one server sees only its rows; another tenant sees none', async () => {
    const e = await earnings(owner, '?days=90')
    const days = e.items.map((r) => r.day)
    expect(days).toEqual([...days].sort().reverse())
    const pat = (await mintPat(app, owner, { scopes: ['marketplaces:read'], server_allowlist: [sB] })).token
    const limited = await earnings(pat, '?days=90')
    expect(limited.items.length).toBeGreaterThan(0)
    expect(limited.items.every((r) => r.server_id === sB)).toBe(true)
    const stranger = await newTenant(app, 'earnings-stranger')
    expect((await earnings(stranger)).items).toEqual([])
    expect((await call(app, 'GET', '/marketplaces/earnings', null)).status).toBe(401)
  })
})
