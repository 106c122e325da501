import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { amountOver, type DayDelta, type Deal, sampleStep, splitByDay, usdOf } from '../../src/modules/earnings/accrual'
import { parseDecimal } from '../../src/platform/money'
import { utcDay } from '../../src/platform/time'

/**
 * Issue 18, the accrual arithmetic as properties over random deal timelines, sync outages and job
 * reruns, driven the way earnings.sample drives it (a watermark per link, the deals of the latest
 * sighting, a 15-minute cap after it): accrual equals price × rented time within one sample period,
 * a rerun never accrues twice, gaps are exactly the known-running time past the cap, midnight
 * splits are exact, and USD is converted at the rate of each accrual moment, never re-priced.
 */

const RUNS = { numRuns: 300 }
const DAY_US = 86_400_000_000
const MIN_US = 60_000_000
const CAP_US = 15 * MIN_US
const T0 = Date.UTC(2026, 10, 20, 22, 0, 0) * 1000 // two hours before a midnight

const dec = (text: string) => parseDecimal(text)!
/** USD per day for a deal, as a decimal text with up to 6 decimals. */
const usdPrice = fc.integer({ min: 0, max: 500_000_000 }).map((m) => (m / 1e6).toFixed(6))

type Segment = { at: number; deals: Deal[] }
type Timeline = { changes: Segment[]; syncs: { at: number; ok: boolean }[]; samples: number[]; end: number }

/** Deals that change at random times after T0 (nothing runs at T0), syncs at random times (some failing), samples at random times (some repeated). */
const timeline = fc
  .record({
    changes: fc.array(fc.record({ offset: fc.integer({ min: 1, max: 2 * DAY_US }), price: fc.option(usdPrice, { nil: null }) }), { maxLength: 8 }),
    syncs: fc.array(fc.record({ offset: fc.integer({ min: 0, max: 2 * DAY_US }), ok: fc.boolean() }), { minLength: 1, maxLength: 60 }),
    samples: fc.array(fc.integer({ min: 1, max: 2 * DAY_US }), { minLength: 1, maxLength: 80 }),
    reruns: fc.array(fc.nat(), { maxLength: 10 }),
  })
  .map(({ changes, syncs, samples, reruns }): Timeline => {
    const sorted = [...samples].sort((a, b) => a - b)
    const withReruns = [...sorted, ...reruns.map((i) => sorted[i % sorted.length]!)].sort((a, b) => a - b)
    return {
      changes: changes
        .map((c) => ({ at: T0 + c.offset, deals: c.price === null ? [] : [{ kind: 'on_demand', currency: 'USD', priceDay: dec(c.price), gpuCount: 1 }] }))
        .sort((a, b) => a.at - b.at),
      syncs: syncs.map((s) => ({ at: T0 + s.offset, ok: s.ok })).sort((a, b) => a.at - b.at),
      samples: withReruns.map((s) => T0 + s),
      end: T0 + 2 * DAY_US,
    }
  })

/** The deals actually running at `t` (none before the first change). */
function truthAt(tl: Timeline, t: number): Deal[] {
  let deals: Deal[] = []
  for (const c of tl.changes) if (c.at <= t) deals = c.deals
  return deals
}

/** The latest successful sighting at or before `t`: when, and the deals it saw. */
function sightingAt(tl: Timeline, t: number): { at: number; deals: Deal[] } | null {
  let seen: { at: number; deals: Deal[] } | null = null
  for (const s of tl.syncs) if (s.ok && s.at <= t) seen = { at: s.at, deals: truthAt(tl, s.at) }
  return seen
}

type Totals = { accruedUs: number; gapUs: number; usdMicros: number; byDay: Map<string, DayDelta> }

/** Runs the samples as the job does: a watermark, the latest sighting's deals, the cap after it. */
function run(tl: Timeline, samples = tl.samples): Totals {
  const totals: Totals = { accruedUs: 0, gapUs: 0, usdMicros: 0, byDay: new Map() }
  let mark = T0
  for (const now of samples) {
    const seen = sightingAt(tl, now)
    const deltas = sampleStep({ fromUs: mark, nowUs: now, knownUntilUs: seen ? seen.at + CAP_US : mark, deals: seen?.deals ?? [], rates: new Map() })
    if (now > mark) mark = now
    for (const d of deltas) {
      totals.accruedUs += d.accruedUs
      totals.gapUs += d.gapUs
      totals.usdMicros += d.usdMicros
      const day = totals.byDay.get(d.day) ?? { day: d.day, accruedUs: 0, gapUs: 0, usdMicros: 0, byCurrency: [] }
      day.accruedUs += d.accruedUs
      day.gapUs += d.gapUs
      day.usdMicros += d.usdMicros
      totals.byDay.set(d.day, day)
    }
  }
  return totals
}

describe('splitting at midnight UTC', () => {
  test('pieces are contiguous, each inside one UTC day, and add up to the interval exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5 * DAY_US }), fc.integer({ min: 0, max: 3 * DAY_US }), (offset, length) => {
        const from = T0 + offset
        const pieces = splitByDay(from, from + length)
        expect(pieces.reduce((n, p) => n + (p.toUs - p.fromUs), 0)).toBe(length)
        let at = from
        for (const p of pieces) {
          expect(p.fromUs).toBe(at)
          expect(p.toUs).toBeGreaterThan(p.fromUs)
          expect(utcDay(p.fromUs)).toBe(p.day)
          expect(utcDay(p.toUs - 1)).toBe(p.day)
          at = p.toUs
        }
      }),
      RUNS,
    )
  })

  test('a sample across midnight accrues each day its own share', () => {
    const midnight = T0 + 2 * 3600 * 1_000_000
    const deals: Deal[] = [{ kind: 'on_demand', currency: 'USD', priceDay: dec('24'), gpuCount: 1 }]
    const out = sampleStep({ fromUs: midnight - 30 * MIN_US, nowUs: midnight + 90 * MIN_US, knownUntilUs: midnight + DAY_US, deals, rates: new Map() })
    expect(out.map((d) => [d.day, d.accruedUs, d.usdMicros])).toEqual([
      ['2026-11-20', 30 * MIN_US, 500_000],
      ['2026-11-21', 90 * MIN_US, 1_500_000],
    ])
  })
})

describe('over random timelines', () => {
  test('a rerun of a sample accrues nothing: totals equal those without reruns', () => {
    fc.assert(
      fc.property(timeline, (tl) => {
        const once = run(tl, [...new Set(tl.samples)])
        const withReruns = run(tl)
        expect(withReruns.accruedUs).toBe(once.accruedUs)
        expect(withReruns.gapUs).toBe(once.gapUs)
        expect(withReruns.usdMicros).toBe(once.usdMicros)
      }),
      RUNS,
    )
  })

  test('every sampled moment is accrued, a gap or idle, once; gaps are exactly the time past the cap while deals were seen running', () => {
    fc.assert(
      fc.property(timeline, (tl) => {
        const totals = run(tl)
        let accrued = 0
        let gap = 0
        let mark = T0
        for (const now of tl.samples) {
          if (now <= mark) continue
          const seen = sightingAt(tl, now)
          if (seen && seen.deals.length > 0) {
            const until = Math.min(now, Math.max(mark, seen.at + CAP_US))
            accrued += until - mark
            gap += now - until
          }
          mark = now
        }
        expect(totals.accruedUs).toBe(accrued)
        expect(totals.gapUs).toBe(gap)
        // The days' shares add up to the same totals (midnight splits lose nothing).
        expect([...totals.byDay.values()].reduce((n, d) => n + d.accruedUs + d.gapUs, 0)).toBe(accrued + gap)
      }),
      RUNS,
    )
  })

  test('with a sync before every sample and no outage, accrual equals price × rented time within one sample period per change', () => {
    fc.assert(
      fc.property(timeline, (tl) => {
        const samples = [...new Set(tl.samples)]
        const healthy: Timeline = { ...tl, syncs: samples.map((at) => ({ at, ok: true })), samples }
        const totals = run(healthy)
        // The truth: ∫ price dt from T0 to the last sample, exactly.
        const last = samples[samples.length - 1]!
        let truth = 0
        let t = T0
        for (const c of [...healthy.changes.filter((c) => c.at < last), { at: last, deals: [] }]) {
          const deals = truthAt(healthy, t)
          const perDay = deals.reduce((n, d) => n + Number(d.priceDay!.units) / 10 ** d.priceDay!.scale, 0)
          truth += (perDay * 1e6 * (Math.max(c.at, t) - t)) / DAY_US
          t = Math.max(c.at, t)
        }
        // Each change is seen at the next sample and applied to that sample's whole interval.
        let bound = 0
        let prev = 0
        let mark = T0
        for (const now of samples) {
          for (const c of healthy.changes) {
            if (c.at > mark && c.at <= now) {
              const perDay = c.deals.reduce((n, d) => n + Number(d.priceDay!.units) / 10 ** d.priceDay!.scale, 0)
              bound += (Math.abs(perDay - prev) * 1e6 * (now - mark)) / DAY_US
              prev = perDay
            }
          }
          mark = now
        }
        expect(Math.abs(totals.usdMicros - truth)).toBeLessThanOrEqual(bound + samples.length * 2 + 1)
      }),
      RUNS,
    )
  })
})

describe('money', () => {
  test('a per-day price over a time is exact to the coin unit of 10^-12, rounded half up once', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n }), fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 3 * DAY_US }), (units, scale, us) => {
        const amount = amountOver({ units, scale }, us)
        const exactNum = units * 10n ** BigInt(12 - scale) * BigInt(us)
        const den = BigInt(DAY_US)
        expect(amount * den <= exactNum + den / 2n).toBe(true)
        expect((amount + 1n) * den > exactNum + den / 2n - 1n).toBe(true)
      }),
      RUNS,
    )
  })

  test('USD is converted at the rate of each accrual moment: a later rate never re-prices what was accrued', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }).map((n) => (n / 1e8).toFixed(8)),
        fc.array(fc.integer({ min: 1, max: 200_000 }), { minLength: 2, maxLength: 6 }),
        (btcPerDay, rates) => {
          const deals: Deal[] = [{ kind: 'spot', currency: 'bitcoin', priceDay: dec(btcPerDay), gpuCount: null }]
          let usd = 0
          let expected = 0
          let mark = T0
          for (const rate of rates) {
            const now = mark + 5 * MIN_US
            const r = new Map([['bitcoin', dec(String(rate))]])
            const out = sampleStep({ fromUs: mark, nowUs: now, knownUntilUs: now + CAP_US, deals, rates: r })
            usd += out.reduce((n, d) => n + d.usdMicros, 0)
            const amount = amountOver(dec(btcPerDay), now - mark)
            expected += usdOf('bitcoin', amount, dec(String(rate)))!
            mark = now
          }
          expect(usd).toBe(expected)
        },
      ),
      RUNS,
    )
  })

  test('a deal whose price the platform does not show accrues its time and no money; a currency without a rate is not converted', () => {
    const out = sampleStep({
      fromUs: T0,
      nowUs: T0 + 10 * MIN_US,
      knownUntilUs: T0 + DAY_US,
      deals: [
        { kind: 'rental', currency: 'USD', priceDay: null, gpuCount: null },
        { kind: 'spot', currency: 'CLORE-Blockchain', priceDay: dec('1440'), gpuCount: null },
      ],
      rates: new Map(),
    })
    expect(out).toHaveLength(1)
    expect(out[0]!.accruedUs).toBe(10 * MIN_US)
    expect(out[0]!.usdMicros).toBe(0)
    expect(out[0]!.byCurrency).toEqual([{ currency: 'CLORE-Blockchain', amount12: 10n * 10n ** 12n, usdMicros: 0 }])
  })
})
