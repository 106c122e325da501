import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { standing, summarize } from '../../src/modules/marketplaces/market/market.stats'

/**
 * The market statistics (market.stats.ts) as properties over generated price lists, in integer
 * micro-dollars: summarize's count and extremes are the list's, its quartiles are ordered integers
 * equal to an independent exact (BigInt) type-7 reference rounded half up, the median of an odd-length
 * list is its middle element, and the summary ignores input order, follows a shift of every price and
 * leaves its input alone; standing's cheaper/equal/dearer partition the market, and its percentile
 * is the mid-rank 100 × (cheaper + equal ÷ 2) ÷ count to one decimal (same exact reference), between
 * 0 and 100, monotone in the price, and 50 for the median of an odd number of distinct prices.
 */

const RUNS = { numRuns: 1000 }
/** Up to 10,000 USD per GPU-hour: any realistic asking price. */
const price = fc.integer({ min: 0, max: 10_000_000_000 })
/** A narrow range, so lists hold many equal prices. */
const crowded = fc.integer({ min: 0, max: 20 })
const prices = fc.oneof(fc.array(price, { minLength: 1, maxLength: 60 }), fc.array(crowded, { minLength: 1, maxLength: 60 }))
const ascending = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)

/** floor(n ÷ d) for a positive d, on BigInts (BigInt division truncates toward zero). */
function floorDiv(n: bigint, d: bigint): bigint {
  const q = n / d
  return n % d !== 0n && n < 0n ? q - 1n : q
}

/**
 * The q = k/4 quantile of ascending `sorted` by the type-7 rule, exactly: h = (n − 1)·k/4, the value
 * x[⌊h⌋] + (x[⌊h⌋+1] − x[⌊h⌋])·(h − ⌊h⌋), rounded half up (toward +∞) to an integer, all in BigInt.
 */
function referenceQuartile(sorted: readonly number[], k: 1 | 2 | 3): number {
  const h4 = BigInt(sorted.length - 1) * BigInt(k) // 4·h
  const lo = Number(h4 / 4n)
  const rest = h4 % 4n // 4·(h − ⌊h⌋)
  const a = BigInt(sorted[lo]!)
  const b = rest === 0n ? a : BigInt(sorted[lo + 1]!)
  const times4 = 4n * a + (b - a) * rest
  return Number(floorDiv(times4 + 2n, 4n))
}

/** The mid-rank percentile in tenths, exactly: round half up of 1000·(2·cheaper + equal) ÷ (2·count). */
function referencePercentileTenths(cheaper: number, equal: number, count: number): number {
  return Number(floorDiv(1000n * BigInt(2 * cheaper + equal) + BigInt(count), 2n * BigInt(count)))
}

describe('summarize', () => {
  test('no prices: null', () => {
    expect(summarize([])).toBeNull()
  })

  test('count, min and max are the list’s; min ≤ p25 ≤ median ≤ p75 ≤ max, all integers', () => {
    fc.assert(
      fc.property(prices, (xs) => {
        const s = summarize(xs)!
        const sorted = ascending(xs)
        expect(s.count).toBe(xs.length)
        expect(s.min).toBe(sorted[0]!)
        expect(s.max).toBe(sorted[sorted.length - 1]!)
        for (const v of [s.min, s.p25, s.median, s.p75, s.max]) expect(Number.isSafeInteger(v)).toBe(true)
        expect(s.min).toBeLessThanOrEqual(s.p25)
        expect(s.p25).toBeLessThanOrEqual(s.median)
        expect(s.median).toBeLessThanOrEqual(s.p75)
        expect(s.p75).toBeLessThanOrEqual(s.max)
      }),
      RUNS,
    )
  })

  test('the quartiles equal an exact type-7 reference rounded half up', () => {
    fc.assert(
      fc.property(prices, (xs) => {
        const sorted = ascending(xs)
        const s = summarize(xs)!
        expect({ p25: s.p25, median: s.median, p75: s.p75 }).toEqual({
          p25: referenceQuartile(sorted, 1),
          median: referenceQuartile(sorted, 2),
          p75: referenceQuartile(sorted, 3),
        })
      }),
      RUNS,
    )
  })

  test('the median of an odd number of prices is the middle one; of an even number, the mean of the middle two rounded half up', () => {
    fc.assert(
      fc.property(prices, (xs) => {
        const sorted = ascending(xs)
        const n = sorted.length
        const median = summarize(xs)!.median
        if (n % 2 === 1) expect(median).toBe(sorted[(n - 1) / 2]!)
        else expect(median).toBe(Math.floor((sorted[n / 2 - 1]! + sorted[n / 2]! + 1) / 2))
      }),
      RUNS,
    )
  })

  test('with 4k + 1 prices every quartile is one of the prices (no interpolation)', () => {
    fc.assert(
      fc.property(fc.nat({ max: 15 }), fc.array(price, { minLength: 61, maxLength: 61 }), (k, pool) => {
        const sorted = ascending(pool.slice(0, 4 * k + 1))
        const s = summarize(sorted)!
        expect([s.p25, s.median, s.p75]).toEqual([sorted[k]!, sorted[2 * k]!, sorted[3 * k]!])
      }),
      RUNS,
    )
  })

  test('the order of the prices does not matter, and the input is left as it was', () => {
    fc.assert(
      fc.property(
        prices.chain((xs) => fc.tuple(fc.constant(xs), fc.shuffledSubarray(xs, { minLength: xs.length, maxLength: xs.length }))),
        ([xs, shuffled]) => {
          const before = [...shuffled]
          expect(summarize(shuffled)).toEqual(summarize(xs))
          expect(summarize(ascending(xs))).toEqual(summarize(xs))
          expect(shuffled).toEqual(before)
        },
      ),
      RUNS,
    )
  })

  test('adding the same amount to every price adds it to every statistic', () => {
    fc.assert(
      fc.property(prices, fc.integer({ min: 0, max: 1_000_000_000 }), (xs, shift) => {
        const s = summarize(xs)!
        expect(summarize(xs.map((x) => x + shift))).toEqual({
          count: s.count,
          min: s.min + shift,
          p25: s.p25 + shift,
          median: s.median + shift,
          p75: s.p75 + shift,
          max: s.max + shift,
        })
      }),
      RUNS,
    )
  })

  test('one price repeated: every statistic is that price', () => {
    fc.assert(
      fc.property(price, fc.integer({ min: 1, max: 50 }), (p, n) => {
        expect(summarize(Array(n).fill(p))).toEqual({ count: n, min: p, p25: p, median: p, p75: p, max: p })
      }),
      RUNS,
    )
  })

  test('worked examples: interpolation between ranks, halves rounded up', () => {
    expect(summarize([4, 1, 3, 2])).toEqual({ count: 4, min: 1, p25: 2, median: 3, p75: 3, max: 4 }) // 1.75, 2.5, 3.25
    expect(summarize([300_000, 400_000, 500_000, 600_000])).toEqual({ count: 4, min: 300_000, p25: 375_000, median: 450_000, p75: 525_000, max: 600_000 })
    expect(summarize([1_000_001, 1_000_002])).toEqual({ count: 2, min: 1_000_001, p25: 1_000_001, median: 1_000_002, p75: 1_000_002, max: 1_000_002 })
    expect(summarize([7])).toEqual({ count: 1, min: 7, p25: 7, median: 7, p75: 7, max: 7 })
  })
})

describe('standing', () => {
  const market = prices.map(ascending)

  test('an empty market: all counts 0 and no percentile', () => {
    fc.assert(
      fc.property(price, (p) => {
        expect(standing(p, [])).toEqual({ cheaper: 0, equal: 0, dearer: 0, percentile: null })
      }),
    )
  })

  test('cheaper, equal and dearer count the prices below, at and above, and sum to the market', () => {
    fc.assert(
      fc.property(market, fc.oneof(price, crowded), (sorted, p) => {
        const s = standing(p, sorted)
        expect(s.cheaper).toBe(sorted.filter((x) => x < p).length)
        expect(s.equal).toBe(sorted.filter((x) => x === p).length)
        expect(s.dearer).toBe(sorted.filter((x) => x > p).length)
        expect(s.cheaper + s.equal + s.dearer).toBe(sorted.length)
      }),
      RUNS,
    )
  })

  test('the percentile is the exact mid-rank reference to one decimal, between 0 and 100', () => {
    fc.assert(
      fc.property(market, fc.oneof(price, crowded), (sorted, p) => {
        const s = standing(p, sorted)
        expect(s.percentile).toBe(referencePercentileTenths(s.cheaper, s.equal, sorted.length) / 10)
        expect(s.percentile!).toBeGreaterThanOrEqual(0)
        expect(s.percentile!).toBeLessThanOrEqual(100)
        expect(Math.abs(s.percentile! * 10 - Math.round(s.percentile! * 10))).toBeLessThan(1e-9)
      }),
      RUNS,
    )
  })

  test('a dearer price never stands lower', () => {
    fc.assert(
      fc.property(market, fc.oneof(price, crowded), fc.oneof(price, crowded), (sorted, a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a]
        expect(standing(hi, sorted).percentile!).toBeGreaterThanOrEqual(standing(lo, sorted).percentile!)
      }),
      RUNS,
    )
  })

  test('below the whole market: 0; above it: 100; at a market of one price: 50', () => {
    fc.assert(
      fc.property(market, (sorted) => {
        expect(standing(sorted[0]! - 1, sorted)).toEqual({ cheaper: 0, equal: 0, dearer: sorted.length, percentile: 0 })
        expect(standing(sorted[sorted.length - 1]! + 1, sorted)).toEqual({ cheaper: sorted.length, equal: 0, dearer: 0, percentile: 100 })
        const flat = Array(sorted.length).fill(sorted[0]!)
        expect(standing(sorted[0]!, flat)).toEqual({ cheaper: 0, equal: sorted.length, dearer: 0, percentile: 50 })
      }),
      RUNS,
    )
  })

  test('the median of an odd number of distinct prices stands at 50, with as many cheaper as dearer', () => {
    fc.assert(
      fc.property(fc.uniqueArray(price, { minLength: 1, maxLength: 61 }), (xs) => {
        const sorted = ascending(xs.length % 2 === 1 ? xs : xs.slice(1))
        const median = summarize(sorted)!.median
        const half = (sorted.length - 1) / 2
        expect(standing(median, sorted)).toEqual({ cheaper: half, equal: 1, dearer: half, percentile: 50 })
      }),
      RUNS,
    )
  })

  test('among distinct prices, the one at rank i (from 0) stands at 100 × (i + ½) ÷ n', () => {
    fc.assert(
      fc.property(fc.uniqueArray(price, { minLength: 1, maxLength: 60 }), fc.nat(), (xs, at) => {
        const sorted = ascending(xs)
        const i = at % sorted.length
        const s = standing(sorted[i]!, sorted)
        expect(s).toMatchObject({ cheaper: i, equal: 1, dearer: sorted.length - i - 1 })
        expect(s.percentile).toBe(referencePercentileTenths(i, 1, sorted.length) / 10)
        expect(Math.abs(s.percentile! - (100 * (i + 0.5)) / sorted.length)).toBeLessThanOrEqual(0.05 + 1e-9)
      }),
      RUNS,
    )
  })

  test('the cheapest of a market stands at 0 cheaper, the dearest at 0 dearer', () => {
    fc.assert(
      fc.property(market, (sorted) => {
        const s = summarize(sorted)!
        expect(standing(s.min, sorted).cheaper).toBe(0)
        expect(standing(s.max, sorted).dearer).toBe(0)
      }),
      RUNS,
    )
  })

  test('worked examples', () => {
    expect(standing(500_000, [300_000, 350_000, 400_000, 500_000, 500_000, 600_000])).toEqual({ cheaper: 3, equal: 2, dearer: 1, percentile: 66.7 })
    expect(standing(2, [1, 2, 3])).toEqual({ cheaper: 1, equal: 1, dearer: 1, percentile: 50 })
    expect(standing(1, [1, 2, 3])).toEqual({ cheaper: 0, equal: 1, dearer: 2, percentile: 16.7 })
    expect(standing(3, [1, 2, 3, 4, 5, 6, 7, 8])).toEqual({ cheaper: 2, equal: 1, dearer: 5, percentile: 31.3 }) // 31.25 rounds half up
  })
})
