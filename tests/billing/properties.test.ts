import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import fc from 'fast-check'
import { call, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import {
  addServers,
  adjust,
  clockTo,
  daysOfUtcMonth,
  doubleCharges,
  expectedHourly,
  expectedRanges,
  getBilling,
  hourOf,
  iso,
  ledgerAll,
  micros,
  offsetChanges,
  payer,
  RANGES,
  runCharges,
  setZone,
  spendOf,
  STARTER_MICROS,
  topUp,
  US_PER_DAY,
  US_PER_HOUR,
  US_PER_MINUTE,
  usOf,
  utcUs,
} from '../support/billing'

/**
 * Properties over random histories, against the real app over HTTP:
 *  1. charges (job runs after random clock moves), adjustments, top-ups, reversals, enrolments,
 *     decommissions and reruns in any order: the balance is the sum of the entries and the last
 *     balance_after; each balance_after is the running sum by seq; no (tenant, hour) is charged
 *     twice; and the charges are exactly what the charge rule says for the fleet the tenant had.
 *  2. in any of six zones at random moments (DST change days and month edges included): the
 *     ledger's `range` sums equal the tiles, the tiles are the zone's calendar periods, and the
 *     periods fit together (yesterday ends where today starts, the month contains today, …).
 * numRuns is kept small: every run is real HTTP on a real database.
 */
const ENV = { LOG_LEVEL: 'silent', SESSION_IDLE_SECONDS: String(365 * 86400), SESSION_ABSOLUTE_SECONDS: String(365 * 86400) }
const LAG = 75 * US_PER_MINUTE

/** Micro-USD as a money decimal string (test-side, independent of src/platform/money.ts). */
const usd = (m: number) => `${m < 0 ? '-' : ''}${Math.floor(Math.abs(m) / 1e6)}.${String(Math.abs(m) % 1e6).padStart(6, '0')}`

type Op =
  | { t: 'advance'; minutes: number }
  | { t: 'charge' }
  | { t: 'rerun' }
  | { t: 'adjust'; micros: number }
  | { t: 'topup'; micros: number }
  | { t: 'enrol'; n: number }
  | { t: 'decommission'; pick: number }
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ t: fc.constant('advance' as const), minutes: fc.integer({ min: 1, max: 300 }) }), weight: 4 },
  { arbitrary: fc.record({ t: fc.constant('charge' as const) }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('rerun' as const) }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('adjust' as const), micros: fc.integer({ min: -30_000_000, max: 30_000_000 }).filter((x) => x !== 0) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('topup' as const), micros: fc.integer({ min: -10_000_000, max: 60_000_000 }).filter((x) => x !== 0) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('enrol' as const), n: fc.integer({ min: 1, max: 3 }) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('decommission' as const), pick: fc.nat() }), weight: 1 },
)

describe('property: the ledger adds up whatever happens', () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startTestApp(ENV)
    await clockTo(app, utcUs(2027, 1, 30, 20, 22))
  })
  afterAll(() => app.close())

  test('balance = sum of entries = last balance_after; balance_after = running sum by seq; each hour charged once, as the rule says', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 4, maxLength: 14 }), async (ops) => {
        const owner: Member = await payer(app, 'starter', 'prop')
        const live: string[] = []
        for (const op of ops) {
          if (op.t === 'advance') await clockTo(app, app.deps.clock.nowUs() + op.minutes * US_PER_MINUTE)
          else if (op.t === 'charge') await runCharges(app)
          else if (op.t === 'rerun') {
            await runCharges(app)
            await runCharges(app)
          } else if (op.t === 'adjust') await adjust(app, owner.tenantId, usd(op.micros), 'property adjustment')
          else if (op.t === 'topup') await topUp(app, owner.tenantId, op.micros)
          else if (op.t === 'enrol') live.push(...(await addServers(app, owner.tenantId, op.n)))
          else if (live.length) {
            const [id] = live.splice(op.pick % live.length, 1)
            expect((await call(app, 'POST', `/servers/${id}/decommission`, owner)).status).toBe(200)
          }
        }
        // A final run at half past an hour, so which hours are due cannot change while we look.
        const now = app.deps.clock.nowUs()
        const safe = hourOf(now) + 30 * US_PER_MINUTE > now ? hourOf(now) + 30 * US_PER_MINUTE : hourOf(now) + 90 * US_PER_MINUTE
        await clockTo(app, safe)
        await runCharges(app)
        const due = hourOf(safe - LAG)

        const entries = (await app.deps.db.all(
          sql`SELECT id, seq, kind, amount_micros, balance_after_micros, occurred_at, charge_hour FROM ledger_entries WHERE tenant_id = ${owner.tenantId} ORDER BY seq`,
        )) as {
          id: string
          seq: number
          kind: string
          amount_micros: number
          balance_after_micros: number
          occurred_at: number
          charge_hour: number | null
        }[]
        let running = 0
        entries.forEach((e, i) => {
          running += e.amount_micros
          expect({ seq: e.seq, after: e.balance_after_micros }).toEqual({ seq: i + 1, after: running })
        })
        const billing = await getBilling(app, owner)
        expect(micros(billing.balance_usd)).toBe(running)
        const viaHttp = await ledgerAll(app, owner)
        expect(viaHttp).toHaveLength(entries.length)
        expect(viaHttp.reduce((s, r) => s + micros(r.amount_usd), 0)).toBe(running)
        if (entries.length) expect(micros(viaHttp.find((r) => r.id === entries.at(-1)!.id)!.balance_after_usd)).toBe(running)
        expect(await doubleCharges(app)).toEqual([])

        // The charge rule over the fleet the tenant really had.
        const fleet = (await app.deps.db.all(sql`SELECT created_at, decommissioned_at FROM servers WHERE tenant_id = ${owner.tenantId}`)) as {
          created_at: number
          decommissioned_at: number | null
        }[]
        const expected: [number, number][] = []
        if (fleet.length)
          for (let h = hourOf(Math.min(...fleet.map((s) => s.created_at))); h <= due; h += US_PER_HOUR) {
            const n = fleet.filter((s) => s.created_at < h + US_PER_HOUR && (s.decommissioned_at === null || s.decommissioned_at > h)).length
            if (n) expected.push([h, -expectedHourly(STARTER_MICROS, n, daysOfUtcMonth(h))])
          }
        const charges = entries.filter((e) => e.kind === 'charge')
        expect(charges.map((c) => [c.charge_hour, c.amount_micros]).sort((a, b) => a[0]! - b[0]!)).toEqual(expected)
        for (const c of charges) expect(c.occurred_at).toBe(c.charge_hour!)
        // Leave the next run a quiet fleet.
        for (const id of live) await call(app, 'POST', `/servers/${id}/decommission`, owner)
      }),
      { numRuns: 14, endOnFailure: true },
    )
  }, 60_000)
})

const ZONES = ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Pacific/Chatham', 'UTC']
const SPAN: [number, number] = [Date.UTC(2027, 0, 1), Date.UTC(2029, 0, 1)]
const changes = ZONES.flatMap((z) => offsetChanges(z, ...SPAN))
const monthEdges = Array.from({ length: 21 }, (_, i) => Date.UTC(2027, i + 3, 1))
/** A moment (ms): around a DST change, around a month's first day, or anywhere in 2027–2028. */
const momentArb = fc
  .tuple(
    fc.oneof(
      fc.tuple(fc.constantFrom(...changes), fc.integer({ min: -30, max: 30 })).map(([t, h]) => t + h * 3_600_000),
      fc.tuple(fc.constantFrom(...monthEdges), fc.integer({ min: -16, max: 16 })).map(([t, h]) => t + h * 3_600_000),
      fc.integer({ min: SPAN[0] + 45 * 86_400_000, max: SPAN[1] - 86_400_000 }),
    ),
    fc.integer({ min: 0, max: 3 }),
    fc.integer({ min: 5, max: 9 }),
  )
  // Five to ten minutes past a quarter hour: no zone here has a day boundary within five minutes.
  .map(([t, quarter, minute]) => Math.floor(t / 3_600_000) * 3_600_000 + (quarter * 15 + minute) * 60_000)

describe('property: tiles and ranges in any zone', () => {
  test("at random moments, DST change days included, every range sums to its tile and the tiles are the zone's calendar periods", async () => {
    expect(changes.length).toBeGreaterThanOrEqual(16) // four zones with DST, two changes a year, two years
    await fc.assert(
      fc.asyncProperty(
        momentArb,
        fc.array(fc.integer({ min: 1, max: 40 * 24 * 60 }), { minLength: 3, maxLength: 8 }),
        fc.subarray(ZONES, { minLength: 3 }),
        async (momentMs, minutesBack, zones) => {
          const M = momentMs * 1000
          const app = await startTestApp(ENV)
          try {
            // History: adjustments and top-ups at random instants up to 40 days back, charges for the last 30 hours.
            const instants = [...new Set(minutesBack)].sort((a, b) => b - a).map((m) => M - m * US_PER_MINUTE)
            await clockTo(app, instants[0]! - US_PER_MINUTE)
            const owner = await payer(app, 'starter', 'zones')
            for (const [i, at] of instants.entries()) {
              await clockTo(app, at)
              if (i % 3 === 2) await topUp(app, owner.tenantId, 7_000_000)
              else await adjust(app, owner.tenantId, i % 2 ? '-1.25' : '0.40')
            }
            if (app.deps.clock.nowUs() < M - 30 * US_PER_HOUR) await clockTo(app, M - 30 * US_PER_HOUR)
            await addServers(app, owner.tenantId, 2)
            await clockTo(app, M)
            await runCharges(app)

            for (const zone of zones) {
              await setZone(app, owner, zone)
              const b = await getBilling(app, owner)
              const now = app.deps.clock.nowUs()
              const want = expectedRanges(zone, now)
              const t = Object.fromEntries(RANGES.map((r) => [r, [usOf(b.tiles[r].from), usOf(b.tiles[r].to)]])) as Record<string, [number, number]>
              for (const r of RANGES)
                expect({ zone, r, from: iso(t[r]![0]), to: iso(t[r]![1]) }).toEqual({ zone, r, from: iso(want[r][0]), to: iso(want[r][1]) })
              // The periods fit together.
              expect(t.yesterday![1]).toBe(t.today![0])
              expect(t['7d']![1]).toBe(t.today![1])
              expect(t['7d']![0]).toBeLessThan(t.yesterday![0])
              expect(t.prev_month![1]).toBe(t.month![0])
              expect(t.month![0]).toBeLessThanOrEqual(t.today![0])
              expect(t.today![1]).toBeLessThanOrEqual(t.month![1])
              expect(now >= t.today![0] && now < t.today![1]).toBe(true)
              expect([23, 23.5, 24, 24.5, 25]).toContain((t.today![1] - t.today![0]) / US_PER_HOUR)
              expect(t.month![1] - t.month![0]).toBeLessThanOrEqual(31 * US_PER_DAY + US_PER_HOUR)
              // Each range's charge and adjustment rows add up to its tile, and stay inside it.
              for (const r of RANGES) {
                const rows = await ledgerAll(app, owner, { range: r })
                for (const row of rows) expect(usOf(row.occurred_at) >= t[r]![0] && usOf(row.occurred_at) < t[r]![1]).toBe(true)
                expect({ zone, r, sum: spendOf(rows) }).toEqual({ zone, r, sum: micros(b.tiles[r].spend_usd) })
              }
            }
          } finally {
            await app.close()
          }
        },
      ),
      { numRuns: 10, endOnFailure: true },
    )
  }, 90_000)
})
