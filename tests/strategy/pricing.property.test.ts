import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { quantile } from '../../src/modules/marketplaces/market/market.stats'
import { choosePrice, coinPerDay, costOf, floorOf } from '../../src/modules/strategy/pricing'
import { formatMoney, MAX_MONEY_MICROS } from '../../src/platform/money'

/**
 * Issue 21, the price rule as properties over random markets and policies: whatever the market
 * does, a suggestion never falls below the floor; it stays under the ceiling whenever a multiple of
 * the step fits between the two; it is a multiple of the step unless a raise was held at the
 * current price; the floor is the least price that keeps the margin after the platform's cut; and a
 * coin price is never worth less than the dollar price it came from.
 */

const RUNS = { numRuns: 500 }
const price = fc.integer({ min: 1, max: 5_000_000 })
const percent = fc.integer({ min: 0, max: 9_999 }).map((n) => (n / 100).toFixed(2))

const inputs = fc.record({
  market: fc.option(fc.array(price, { maxLength: 40 }).map((a) => [...a].sort((x, y) => x - y))),
  targetPercentile: fc.integer({ min: 0, max: 100 }),
  currentMicros: fc.option(price),
  floorMicros: fc.integer({ min: 0, max: 3_000_000 }),
  ceilingMicros: fc.option(price),
  stepMicros: fc.constantFrom(1, 100, 1_000, 5_000, 10_000, 50_000),
  holdRaises: fc.boolean(),
})

describe('choosing a price', () => {
  test('the suggestion is never below the floor, whatever the market', () => {
    fc.assert(
      fc.property(inputs, (p) => {
        expect(choosePrice(p, quantile).suggestedMicros).toBeGreaterThanOrEqual(p.floorMicros)
      }),
      RUNS,
    )
  })

  test('the suggestion stays under a ceiling that leaves room for a multiple of the step above the floor', () => {
    fc.assert(
      fc.property(inputs, (p) => {
        const room = p.ceilingMicros !== null && Math.ceil(p.floorMicros / p.stepMicros) * p.stepMicros <= p.ceilingMicros
        if (room) expect(choosePrice(p, quantile).suggestedMicros).toBeLessThanOrEqual(p.ceilingMicros!)
      }),
      RUNS,
    )
  })

  test('the suggestion is a multiple of the step, unless a raise was held at the current price', () => {
    fc.assert(
      fc.property(inputs, (p) => {
        const c = choosePrice(p, quantile)
        if (c.boundBy === 'held_for_renters') expect(c.suggestedMicros).toBe(p.currentMicros!)
        else expect(c.suggestedMicros % p.stepMicros).toBe(0)
      }),
      RUNS,
    )
  })

  test('a held raise never lowers the price and never goes above the current one', () => {
    fc.assert(
      fc.property(inputs, (p) => {
        const free = choosePrice({ ...p, holdRaises: false }, quantile)
        const held = choosePrice({ ...p, holdRaises: true }, quantile)
        if (p.currentMicros !== null && free.suggestedMicros > p.currentMicros && p.currentMicros >= p.floorMicros)
          expect(held.suggestedMicros).toBe(p.currentMicros)
        else expect(held).toEqual(free)
      }),
      RUNS,
    )
  })
})

describe('the floor', () => {
  test('is the least price that keeps the margin above cost once the platform took its cut', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000 }), percent, percent, (cost, margin, commission) => {
        const floor = floorOf(cost, margin, commission)
        if (!('micros' in floor)) throw new Error(`no floor: ${floor.refused}`)
        const f = floor.micros
        // price × (100 − c) ≥ cost × (100 + m), in hundredths of a percent to stay in integers.
        const keep = BigInt(10_000 - Math.round(Number(commission) * 100))
        const need = BigInt(cost) * BigInt(10_000 + Math.round(Number(margin) * 100))
        expect(BigInt(f) * keep >= need).toBe(true)
        if (f > 0) expect(BigInt(f - 1) * keep < need).toBe(true)
      }),
      RUNS,
    )
  })
})

describe('coin prices', () => {
  test('a per-day coin price is worth at least the dollar price per GPU-hour it came from, and less than one coin digit more', () => {
    fc.assert(
      fc.property(
        price,
        fc.integer({ min: 1, max: 8 }),
        fc.constantFrom('1', '60000', '0.0025', '2.5', '97123.45'),
        fc.constantFrom(4, 8),
        (micros, gpus, rate, digits) => {
          const amount = coinPerDay(micros, gpus, rate, digits)!
          const [whole, frac = ''] = amount.split('.')
          expect(frac.length).toBeLessThanOrEqual(digits)
          const units = BigInt(whole! + frac.padEnd(digits, '0'))
          const [rw, rf = ''] = rate.split('.')
          const rateUnits = BigInt(rw! + rf)
          // units × 10^-digits × rateUnits × 10^-rf ≥ micros × gpus × 24 × 10^-6
          const worth = units * rateUnits * 10n ** 6n
          const due = BigInt(micros * gpus * 24) * 10n ** BigInt(digits + rf.length)
          expect(worth >= due).toBe(true)
          expect((units - 1n) * rateUnits * 10n ** 6n < due).toBe(true)
        },
      ),
      RUNS,
    )
  })

  test('a 100 % commission leaves no floor at all', () => {
    expect(floorOf(50_000, '0', '100')).toEqual({ refused: 'commission_takes_all' })
    expect(floorOf(50_000, '0', '100.0000')).toEqual({ refused: 'commission_takes_all' })
  })

  test('issue 34: a floor above the money range is refused, never an unsafe number, whatever the costs and percentages', () => {
    // The attack of issue 34: a cost near the range grossed up by a 99.9999 % commission.
    expect(floorOf(13_354_700_860_257, '0', '99.9999')).toEqual({ refused: 'above_money_range' })
    expect(floorOf(MAX_MONEY_MICROS, '0', null)).toEqual({ micros: MAX_MONEY_MICROS })
    expect(floorOf(MAX_MONEY_MICROS, '0.0001', null)).toEqual({ refused: 'above_money_range' })
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: MAX_MONEY_MICROS }),
        fc.integer({ min: 0, max: 9_999_999 }).map((n) => (n / 10_000).toFixed(4)),
        fc.integer({ min: 1, max: 999_999 }).map((n) => (n / 10_000).toFixed(4)),
        (cost, margin, commission) => {
          const f = floorOf(cost, margin, commission)
          if ('micros' in f) {
            expect(Number.isSafeInteger(f.micros)).toBe(true)
            expect(f.micros).toBeLessThanOrEqual(MAX_MONEY_MICROS)
            expect(() => formatMoney(f.micros)).not.toThrow()
          } else expect(f.refused).toBe('above_money_range')
        },
      ),
      RUNS,
    )
  })

  test('costs are added in integers, and a part that is no whole amount or a sum above the range is refused', () => {
    expect(costOf([50_000, null, 2_778])).toBe(52_778)
    expect(costOf([MAX_MONEY_MICROS, 1])).toBeNull()
    expect(costOf([Number.POSITIVE_INFINITY])).toBeNull()
    expect(costOf([Number.NaN, 1])).toBeNull()
    expect(costOf([2 ** 60])).toBeNull()
  })

  test('an unknown or zero rate gives no price', () => {
    expect(coinPerDay(500_000, 2, null, 8)).toBeNull()
    expect(coinPerDay(500_000, 2, '0', 8)).toBeNull()
  })
})
