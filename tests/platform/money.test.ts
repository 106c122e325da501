import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { divideRounded, formatMoney, MAX_MONEY_MICROS, MONEY_PATTERN, MoneyFormatError, parseMoney } from '../../src/platform/money'

const micros = fc.integer({ min: -MAX_MONEY_MICROS, max: MAX_MONEY_MICROS })

describe('parseMoney', () => {
  test.each([
    ['0', 0],
    ['12.5', 12_500_000],
    ['12.50', 12_500_000],
    ['-3.000001', -3_000_001],
    ['0.000001', 1],
    ['007.10', 7_100_000],
    ['1000000000', MAX_MONEY_MICROS],
    ['-1000000000', -MAX_MONEY_MICROS],
  ])('reads "%s" as %d micro-USD', (text, expected) => {
    expect(parseMoney(text)).toBe(expected)
  })

  test('reads negative zero as plain zero', () => {
    expect(Object.is(parseMoney('-0'), 0)).toBe(true)
    expect(Object.is(parseMoney('-0.000000'), 0)).toBe(true)
  })

  test.each([[12.5], [0], [12], [null], [undefined], [true], [{}], [['1']]])('refuses the JSON value %p, since money is always a string', (value) => {
    expect(() => parseMoney(value)).toThrow(MoneyFormatError)
  })

  test.each(['1.', '.5', '1.1234567', '1e3', ' 1', '1 ', '+1', '', '-', '1,5', '0x10', '١', 'NaN', 'Infinity', '--1', '1.2.3'])(
    'refuses the string "%s"',
    (text) => {
      expect(() => parseMoney(text)).toThrow(MoneyFormatError)
    },
  )

  test.each(['1000000000.000001', '-1000000000.000001', '1000000001', '99999999999999999999', '9'.repeat(400)])(
    'refuses the out-of-range amount %s',
    (text) => {
      expect(() => parseMoney(text)).toThrow(/out of range/)
    },
  )
})

describe('formatMoney', () => {
  test.each([
    [12_500_000, '12.50'],
    [1_234_567, '1.234567'],
    [-5, '-0.000005'],
    [0, '0.00'],
    [-0, '0.00'],
    [1_000_000, '1.00'],
    [1_120_000, '1.12'],
    [1_123_000, '1.123'],
    [-12_000_000, '-12.00'],
    [MAX_MONEY_MICROS, '1000000000.00'],
  ])('writes %d micro-USD as "%s"', (value, text) => {
    expect(formatMoney(value)).toBe(text)
  })

  test('refuses anything that is not an integer of micro-USD', () => {
    for (const bad of [1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) expect(() => formatMoney(bad)).toThrow(RangeError)
  })

  test('every amount formats to the wire pattern and parses back to itself', () => {
    const wire = new RegExp(MONEY_PATTERN)
    fc.assert(
      fc.property(micros, (m) => {
        const text = formatMoney(m)
        return wire.test(text) && parseMoney(text) === m
      }),
      { numRuns: 2000 },
    )
  })

  test('any valid decimal string keeps its value through parse and format', () => {
    const decimal = fc
      .tuple(fc.boolean(), fc.integer({ min: 0, max: 999_999_999 }), fc.option(fc.stringMatching(/^[0-9]{1,6}$/), { nil: undefined }))
      .map(([neg, whole, frac]) => `${neg ? '-' : ''}${whole}${frac === undefined ? '' : `.${frac}`}`)
    fc.assert(fc.property(decimal, (text) => parseMoney(formatMoney(parseMoney(text))) === parseMoney(text)))
  })
})

/** The exact answer, in integers: round half away from zero. */
function reference(m: number, d: number): number {
  const a = BigInt(Math.abs(m))
  const b = BigInt(d)
  const q = (a * 2n + b) / (b * 2n)
  return m < 0 ? -Number(q) : Number(q)
}

describe('divideRounded', () => {
  test.each([
    [10, 4, 3],
    [-10, 4, -3],
    [9, 4, 2],
    [11, 4, 3],
    [-9, 4, -2],
    [-11, 4, -3],
    [7, 7, 1],
    [0, 5, 0],
    [2_000_000, 30 * 24, 2778],
    [4_000_000, 31, 129_032],
  ])('%d / %d rounds half away from zero to %d', (m, d, q) => {
    expect(divideRounded(m, d)).toBe(q)
  })

  test('matches exact integer arithmetic over the whole safe range', () => {
    const m = fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER })
    const d = fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }))
    fc.assert(
      fc.property(m, d, (a, b) => divideRounded(a, b) === reference(a, b)),
      { numRuns: 5000 },
    )
  })

  test('refuses a zero or negative divisor and non-integers', () => {
    expect(() => divideRounded(10, 0)).toThrow(RangeError)
    expect(() => divideRounded(10, -2)).toThrow(RangeError)
    expect(() => divideRounded(10.5, 2)).toThrow(RangeError)
    expect(() => divideRounded(10, 2.5)).toThrow(RangeError)
  })
})
