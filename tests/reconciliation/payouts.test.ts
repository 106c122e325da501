import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { utcDay } from '../../src/platform/time'
import { addMember, call, insertServer, newTenant, setPlan, type Member } from '../support/access'
import { startEarlyInUtcDay, startTestApp, type TestApp } from '../support/app'
import { expectProblem } from '../support/problem'

/**
 * Issue 40, "Payouts reconciled": per UTC day and machine, gpuhq's accrual beside the platform's own
 * figure, the commission that explains the difference and the unexplained gap. Over real HTTP against
 * both simulators with the test clock: a day the platform paid less than accrual minus commission is
 * flagged (beyond the owner's threshold) and a day that matches is not; the payout_gap alert opens
 * once and resolves when the platform's figure is corrected; tenants stay apart; bad input is 422
 * with a pointer. The expected figures are computed here from what the test set up: rented hours ×
 * cards × price, the commission entered in the cost basis, the platform's figure put in the simulator.
 */

const KEY_A = 'vast-payouts-key-0123456789abcdef'
const KEY_OTHER = 'vast-payouts-other-key-fedcba9876'
const KEY_B = 'clore-payouts-key-5f2e9a17c3'
const OWNER_A = 7401
const OWNER_OTHER = 7402
const DAY_US = 86_400_000_000

// What the test sets up, and what follows from it.
const CARDS = 2
const PRICE_GPU_HOUR_MICROS = 500_000 // 0.50 USD per card-hour
const RENTED_HOURS = 2
const COMMISSION_PERCENT = 25
const accruedMicros = RENTED_HOURS * CARDS * PRICE_GPU_HOUR_MICROS // 2.00
const commissionMicros = (accruedMicros * COMMISSION_PERCENT) / 100 // 0.50
const expectedMicros = accruedMicros - commissionMicros // 1.50
const SHORT_PAID = 0.7 // the platform's figure for machine 821: 0.80 short of expected
const MATCH_GPU = 1.5 // machine 822: exactly expected, plus storage income
const MATCH_STORAGE = 0.05
const THRESHOLD = '0.50'

type Row = {
  day: string
  server_id: string
  server_name: string
  marketplace: string
  closed: boolean
  accrued_usd: string
  commission_percent: string | null
  commission_source: string
  commission_usd: string | null
  expected_usd: string | null
  platform_usd: string | null
  difference_usd: string | null
  unexplained_usd: string | null
  flagged: boolean
}
type Answer = {
  from: string
  to: string
  gap_threshold_usd: string
  items: Row[]
  next_cursor: string | null
  totals: Record<string, string | number | null>
  payouts: { marketplace: string; id: string; type: string; day: string; amount_usd: string }[]
  wallets: { marketplace: string; currency: string; day: string; balance: string; usd: string | null }[]
}
type Incident = { kind: string; state: string; occurrences: number; title: string; resolution: string | null; notifications: { title: string }[] }

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Member
let other: Member
let short: string
let match: string
let clore: string
let otherServer: string
let day: string
let dayNumber: number

const money = (micros: number) => (micros / 1_000_000).toFixed(2)
/** Micro-dollars as the API writes them: at least two decimals, no trailing zeros beyond. */
const usd = (m: number) => {
  const text = (m / 1_000_000).toFixed(6).replace(/0+$/, '')
  return /\.\d$/.test(text) ? `${text}0` : text.endsWith('.') ? `${text}00` : text
}
const micros = (s: string | null) => (s === null ? null : Math.round(Number(s) * 1_000_000))

async function job(name: string): Promise<void> {
  const res = await app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' })
  expect(((await res.json()) as { outcome: string }).outcome).toBe('succeeded')
}
const clock = async (advance_seconds: number) =>
  expect((await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds } })).status).toBe(200)

async function reconciliation(who: Member, query = `from=${day}&to=${day}`): Promise<Answer> {
  const res = await call(app, 'GET', `/reconciliation?${query}`, who)
  expect(res.status).toBe(200)
  return (await res.json()) as Answer
}
async function payoutAlerts(who: Member): Promise<Incident[]> {
  const res = await call(app, 'GET', '/alerts?kind=payout_gap', who)
  expect(res.status).toBe(200)
  return ((await res.json()) as { items: Incident[] }).items
}
const rowOf = (a: Answer, server: string) => a.items.find((r) => r.server_id === server)!

beforeAll(async () => {
  simA = await startMarketplaceA({
    rateScale: 0,
    owners: [
      { id: OWNER_A, email: 'payouts@example.com', keys: [{ key: KEY_A, label: 'a' }] },
      { id: OWNER_OTHER, email: 'other@example.com', keys: [{ key: KEY_OTHER, label: 'o' }] },
    ],
  })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    currencyRatesInUsd: { bitcoin: 60000, 'CLORE-Blockchain': 0.0025, 'USD-Blockchain': 1 },
    owners: {
      [KEY_B]: {
        label: 'b',
        userId: 9,
        wallets: [{ name: 'CLORE-Blockchain', deposit: 'clore-deposit-address', balance: 1500.5, withdrawal_fee: 1 }],
        servers: [
          {
            name: 'rig-b',
            id: 64,
            online: true,
            visibility: 'public',
            specs: { gpu: '1x NVIDIA GeForce RTX 3090' },
            pricing: { 'CLORE-Blockchain': 2000 },
            rentals: [{ id: 904, spot: true, currency: 'CLORE-Blockchain', price: 1440, renter: 'clore-renter-key-p' }],
          },
        ],
      },
    },
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url })
  await startEarlyInUtcDay(app)
  owner = await newTenant(app, 'payouts')
  other = await newTenant(app, 'payouts-other')
  for (const t of [owner, other]) await setPlan(app, t.tenantId, 'pro')
  short = await insertServer(app, owner.tenantId, 'rig-short')
  match = await insertServer(app, owner.tenantId, 'rig-match')
  clore = await insertServer(app, owner.tenantId, 'rig-clore')
  otherServer = await insertServer(app, other.tenantId, 'rig-other')
  const rentals: number[] = []
  for (const [machine, ownerId] of [
    [821, OWNER_A],
    [822, OWNER_A],
    [931, OWNER_OTHER],
  ] as const) {
    simA.putMachine(ownerId, machine, {
      hostname: `rig-${machine}`,
      listed: true,
      num_gpus: CARDS,
      gpu_name: 'RTX 4090',
      listed_gpu_cost: PRICE_GPU_HOUR_MICROS / 1e6,
    })
    rentals.push(simA.addRental(machine, { kind: 'on_demand', gpus: CARDS, running: true }))
  }
  const basis = await call(app, 'PUT', '/billing/cost-basis', owner, {
    json: { marketplaces: { marketplace_a: { commission_percent: String(COMMISSION_PERCENT) } } },
  })
  expect(basis.status).toBe(200)
  for (const [who, marketplace, key] of [
    [owner, 'marketplace_a', KEY_A],
    [owner, 'marketplace_b', KEY_B],
    [other, 'marketplace_a', KEY_OTHER],
  ] as const)
    expect((await call(app, 'PUT', `/marketplaces/${marketplace}`, who, { json: { api_key: key } })).status).toBe(200)
  for (const [who, server, marketplace, machine] of [
    [owner, short, 'marketplace_a', '821'],
    [owner, match, 'marketplace_a', '822'],
    [owner, clore, 'marketplace_b', '64'],
    [other, otherServer, 'marketplace_a', '931'],
  ] as const)
    expect((await call(app, 'POST', '/marketplaces/links', who, { json: { server_id: server, marketplace, external_machine_id: machine } })).status).toBe(201)

  // RENTED_HOURS hours of rentals seen by the sync, sampled hourly.
  await job('marketplaces.sync')
  await job('earnings.sample')
  day = utcDay(app.deps.clock.nowUs())
  dayNumber = Math.floor(app.deps.clock.nowUs() / DAY_US)
  for (let h = 0; h < RENTED_HOURS; h++) {
    await clock(3600 - 60)
    await job('marketplaces.sync')
    await clock(60)
    await job('earnings.sample')
  }
  // The rentals end; the sync sees it at once, so nothing more accrues.
  for (const id of rentals) simA.removeRental(id)
  await job('marketplaces.sync')

  // What the platform reports for the day, and a payout in its history.
  simA.addEarnings(OWNER_A, [
    { machine_id: 821, day: dayNumber, gpu_earn: SHORT_PAID, sto_earn: 0, bwu_earn: 0, bwd_earn: 0 },
    { machine_id: 822, day: dayNumber, gpu_earn: MATCH_GPU, sto_earn: MATCH_STORAGE, bwu_earn: 0, bwd_earn: 0 },
  ])
  simA.addEarnings(OWNER_OTHER, [{ machine_id: 931, day: dayNumber, gpu_earn: 0.1, sto_earn: 0, bwu_earn: 0, bwd_earn: 0 }])
  const noonS = (dayNumber * DAY_US) / 1_000_000 + 12 * 3600
  simA.addInvoices(OWNER_A, [
    {
      start: noonS,
      end: noonS + 3600,
      type: 'payout',
      source: 'stripe',
      description: 'Weekly payout',
      amount: 42.5,
      metadata: { invoice_id: 5501, service: 'payout' },
      items: [],
    },
  ])
  const threshold = await call(app, 'PUT', '/reconciliation/settings', owner, { json: { gap_threshold_usd: THRESHOLD } })
  expect(threshold.status).toBe(200)

  // The next UTC day: earnings.sample reads yesterday's figure, then the reconciliation runs.
  const untilTomorrow = ((dayNumber + 1) * DAY_US - app.deps.clock.nowUs()) / 1_000_000 + 3600
  await clock(untilTomorrow)
  await job('earnings.sample')
  await job('reconciliation.evaluate')
})

afterAll(async () => {
  await app.close()
  await simA.stop()
  await simB.stop()
})

describe('per day and machine', () => {
  test('a day the platform paid less than accrual minus commission is flagged; a day that matches is not', async () => {
    const a = await reconciliation(owner)
    expect(a.gap_threshold_usd).toBe(THRESHOLD)
    // The accrual is rented hours × cards × price, to within the real seconds the test itself takes
    // between the sync and the sample (the test clock runs on); the rest follows from it exactly.
    const s = rowOf(a, short)
    const m = rowOf(a, match)
    for (const r of [s, m]) {
      const accrued = micros(r.accrued_usd)!
      expect(Math.abs(accrued - accruedMicros)).toBeLessThanOrEqual(10_000)
      const commission = Math.round((accrued * COMMISSION_PERCENT) / 100)
      expect(r).toMatchObject({
        day,
        marketplace: 'marketplace_a',
        closed: true,
        commission_percent: String(COMMISSION_PERCENT),
        commission_source: 'entered',
        commission_usd: usd(commission),
        expected_usd: usd(accrued - commission),
      })
      expect(micros(r.difference_usd)).toBe(micros(r.platform_usd)! - accrued)
      expect(micros(r.unexplained_usd)).toBe(micros(r.platform_usd)! - (accrued - commission))
    }
    // 821: paid 0.70 against about 1.50 expected, 0.80 short, beyond the 0.50 threshold.
    expect(s).toMatchObject({ server_name: 'rig-short', platform_usd: money(SHORT_PAID * 1e6), flagged: true })
    expect(Math.abs(micros(s.unexplained_usd)! - (SHORT_PAID * 1e6 - expectedMicros))).toBeLessThanOrEqual(10_000)
    // 822: paid what was expected, plus storage income the accrual does not count: not flagged.
    expect(m).toMatchObject({ server_name: 'rig-match', platform_usd: money((MATCH_GPU + MATCH_STORAGE) * 1e6), flagged: false })
    expect(Math.abs(micros(m.unexplained_usd)! - MATCH_STORAGE * 1e6)).toBeLessThanOrEqual(10_000)
    // Clore has no earnings report: its commission is its published 5 % on CLORE, nothing to compare, never flagged.
    const c = rowOf(a, clore)
    expect(c).toMatchObject({
      marketplace: 'marketplace_b',
      commission_percent: '5',
      commission_source: 'published_default',
      platform_usd: null,
      unexplained_usd: null,
      flagged: false,
    })
    expect(micros(c.commission_usd)).toBe(Math.round(micros(c.accrued_usd)! * 0.05))
    expect(a.totals).toMatchObject({ reported_rows: 2, flagged_rows: 1, platform_usd: money((SHORT_PAID + MATCH_GPU + MATCH_STORAGE) * 1e6) })
    expect(micros(a.totals.unexplained_usd as string)).toBe(micros(s.unexplained_usd)! + micros(m.unexplained_usd)!)
  })

  test("the platform's payout history and wallet balances are beside the rows", async () => {
    const tomorrow = utcDay(app.deps.clock.nowUs())
    const a = await reconciliation(owner, `from=${day}&to=${tomorrow}`)
    expect(a.payouts).toEqual([expect.objectContaining({ marketplace: 'marketplace_a', id: '5501', type: 'payout', day, amount_usd: '42.50' })])
    expect(a.wallets).toEqual([
      expect.objectContaining({ marketplace: 'marketplace_b', currency: 'CLORE-Blockchain', day: tomorrow, balance: '1500.5', usd: '3.75125' }),
    ])
    // Filtered to one marketplace, the other's rows, payouts and wallets are left out.
    const onlyB = await reconciliation(owner, `from=${day}&to=${tomorrow}&marketplace=marketplace_b`)
    expect(onlyB.items.every((r) => r.marketplace === 'marketplace_b')).toBe(true)
    expect(onlyB.payouts).toEqual([])
    expect(onlyB.wallets).toHaveLength(1)
  })

  test('pages walk every row once, newest day first', async () => {
    const tomorrow = utcDay(app.deps.clock.nowUs())
    const whole = await reconciliation(owner, `from=${day}&to=${tomorrow}`)
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page: Answer = await reconciliation(owner, `from=${day}&to=${tomorrow}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      expect(page.items.length).toBeLessThanOrEqual(1)
      seen.push(...page.items.map((r) => `${r.day}:${r.server_id}`))
      cursor = page.next_cursor
    } while (cursor)
    expect(seen).toEqual(whole.items.map((r) => `${r.day}:${r.server_id}`))
    expect(new Set(seen).size).toBe(seen.length)
    expect(whole.items[0]!.day >= whole.items[whole.items.length - 1]!.day).toBe(true)
  })
})

describe('the payout_gap alert', () => {
  test('opens once, with its notification, however often the job runs', async () => {
    await job('reconciliation.evaluate')
    await job('reconciliation.evaluate')
    const alerts = await payoutAlerts(owner)
    expect(alerts).toHaveLength(1)
    expect(alerts[0]).toMatchObject({ kind: 'payout_gap', state: 'open', occurrences: 1 })
    expect(alerts[0]!.title).toContain('1 machine-day')
    expect(alerts[0]!.notifications.map((n) => n.title)).toEqual(['Platform paid less than expected'])
  })

  test("resolves when the platform's figure is corrected", async () => {
    // Vast adds what it owed for the day; earnings.sample reads yesterday again an hour later.
    simA.addEarnings(OWNER_A, [{ machine_id: 821, day: dayNumber, gpu_earn: 0.6, sto_earn: 0, bwu_earn: 0, bwd_earn: 0 }])
    await clock(3600)
    await job('earnings.sample')
    await job('reconciliation.evaluate')
    const row = rowOf(await reconciliation(owner), short)
    expect(row).toMatchObject({ platform_usd: money((SHORT_PAID + 0.6) * 1e6), flagged: false })
    expect(Math.abs(micros(row.unexplained_usd)! - ((SHORT_PAID + 0.6) * 1e6 - expectedMicros))).toBeLessThanOrEqual(10_000)
    const alerts = await payoutAlerts(owner)
    expect(alerts).toHaveLength(1)
    expect(alerts[0]).toMatchObject({ state: 'resolved', occurrences: 1 })
    expect(alerts[0]!.resolution).toContain('no machine-day')
  })

  test('the threshold moves the flags and the alert at once', async () => {
    // 0.20 short now: a threshold of 0.10 flags it again (a new incident), 0.50 clears it.
    const lower = await call(app, 'PUT', '/reconciliation/settings', owner, { json: { gap_threshold_usd: '0.10' } })
    expect(await lower.json()).toMatchObject({ gap_threshold_usd: '0.10', default: false })
    expect(rowOf(await reconciliation(owner), short).flagged).toBe(true)
    expect((await payoutAlerts(owner)).map((i) => i.state).sort()).toEqual(['open', 'resolved'])
    expect((await call(app, 'PUT', '/reconciliation/settings', owner, { json: { gap_threshold_usd: THRESHOLD } })).status).toBe(200)
    expect((await payoutAlerts(owner)).map((i) => i.state)).toEqual(['resolved', 'resolved'])
  })
})

describe('tenants apart', () => {
  test("another tenant sees only its own rows, its own default threshold and none of the first's alerts", async () => {
    const o = await reconciliation(other)
    expect(o.items.map((r) => r.server_id)).toEqual([otherServer])
    expect(o.gap_threshold_usd).toBe('1.00')
    expect(o.payouts).toEqual([])
    expect(o.wallets).toEqual([])
    // Its commission is not entered (Vast publishes none): nothing can be called unexplained, nothing flagged.
    expect(o.items[0]).toMatchObject({ commission_source: 'unknown', expected_usd: null, platform_usd: '0.10', unexplained_usd: null, flagged: false })
    expect(await payoutAlerts(other)).toEqual([])
    const settings = await call(app, 'GET', '/reconciliation/settings', other)
    expect(await settings.json()).toEqual({ gap_threshold_usd: '1.00', default: true, version: 0 })
    expect((await reconciliation(owner)).items.some((r) => r.server_id === otherServer)).toBe(false)
  })
})

describe('each tenant apart in the job', () => {
  test("a tenant whose payout read fails fails alone: the other's flags still move", async () => {
    // The other tenant's key loses billing_read: its invoice read is refused (missing_permission).
    simA.updateKey(KEY_OTHER, { permissions: ['machine_read', 'machine_write'] })
    // The owner's threshold drops under the remaining 0.20 shortfall: the job must still flag it.
    await app.deps.db.run(sql`UPDATE reconciliation_settings SET gap_threshold_usd_micros = 100000 WHERE tenant_id = ${owner.tenantId}`)
    await clock(3600)
    const res = await app.fetch('/api/v1/_test/jobs/reconciliation.evaluate/run', { method: 'POST' })
    const run = (await res.json()) as { outcome: string; detail: string | null }
    expect(run.outcome).toBe('partial')
    expect(run.detail).toContain('1 machine-days flagged')
    expect((await payoutAlerts(owner)).filter((i) => i.state === 'open')).toHaveLength(1)
    expect(await payoutAlerts(other)).toEqual([])
    // Put back as it was for the tests below.
    simA.updateKey(KEY_OTHER, { permissions: ['machine_read', 'machine_write', 'billing_read'] })
    expect((await call(app, 'PUT', '/reconciliation/settings', owner, { json: { gap_threshold_usd: THRESHOLD } })).status).toBe(200)
    expect((await payoutAlerts(owner)).filter((i) => i.state === 'open')).toHaveLength(0)
  })
})

describe('bad input', () => {
  test('422 with a pointer, and nothing changes', async () => {
    const cases: [string, string][] = [
      ['from=2026-13-01', '/from'],
      [`from=${day}&to=2000-01-01`, '/from'],
      ['from=2020-01-01&to=2020-12-31', '/from'],
      ['marketplace=marketplace_z', '/marketplace'],
      ['limit=0', '/limit'],
      ['cursor=not-a-cursor', '/cursor'],
      [`days=7&from=${day}`, '/days'],
      ['days=91', '/days'],
    ]
    for (const [query, path] of cases) {
      const p = await expectProblem(await call(app, 'GET', `/reconciliation?${query}`, owner), 422, 'validation_failed')
      expect(p.errors?.[0]?.path).toBe(path)
    }
    for (const body of [{ gap_threshold_usd: '-1' }, { gap_threshold_usd: '1.5.0' }, { gap_threshold_usd: 2 }, { gap_threshold_usd: '9999999999999' }, {}]) {
      const p = await expectProblem(await call(app, 'PUT', '/reconciliation/settings', owner, { json: body }), 422, 'validation_failed')
      expect(p.errors?.[0]?.path).toBe('/gap_threshold_usd')
    }
    expect(await (await call(app, 'GET', '/reconciliation/settings', owner)).json()).toMatchObject({ gap_threshold_usd: THRESHOLD })
  })

  test('a viewer reads but may not set the threshold', async () => {
    const viewer = await addMember(app, owner.tenantId, 'viewer')
    expect((await call(app, 'GET', '/reconciliation', viewer)).status).toBe(200)
    await expectProblem(await call(app, 'PUT', '/reconciliation/settings', viewer, { json: { gap_threshold_usd: '5' } }), 403, 'forbidden')
  })
})
