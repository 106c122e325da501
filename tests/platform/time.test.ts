import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { daysInMonth, formatTimestamp, parseDay, parseTimestamp, US_PER_DAY, utcDay } from '../../src/platform/time'

const WIRE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
/** 9999-12-31T23:59:59.999999Z would not fit a safe integer; the safe range ends in 2255. */
const MAX_US = Math.min(Number.MAX_SAFE_INTEGER, Date.UTC(9999, 11, 31, 23, 59, 59, 999) * 1000 + 999)
const at = (iso: string, micros = 0) => Date.parse(iso) * 1000 + micros

describe('formatTimestamp', () => {
  test('writes UTC with exactly six fraction digits and a Z', () => {
    expect(formatTimestamp(0)).toBe('1970-01-01T00:00:00.000000Z')
    expect(formatTimestamp(1_234_567)).toBe('1970-01-01T00:00:01.234567Z')
    expect(formatTimestamp(at('2026-11-22T14:20:00Z', 123_456))).toBe('2026-11-22T14:20:00.123456Z')
    expect(formatTimestamp(at('2026-11-22T14:20:00Z', 5))).toBe('2026-11-22T14:20:00.000005Z')
    expect(formatTimestamp(-1)).toBe('1969-12-31T23:59:59.999999Z')
  })

  test('every safe instant from 1970 on has the wire shape', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: MAX_US }), (us) => WIRE.test(formatTimestamp(us))))
  })

  test('refuses a number that is not an integer of microseconds', () => {
    expect(() => formatTimestamp(1.5)).toThrow(RangeError)
    expect(() => formatTimestamp(Number.NaN)).toThrow(RangeError)
  })
})

describe('parseTimestamp', () => {
  test('keeps microseconds', () => {
    expect(parseTimestamp('2026-11-22T14:20:00.123456Z')).toBe(at('2026-11-22T14:20:00Z', 123_456))
    expect(parseTimestamp('2026-11-22T14:20:00.000001Z')).toBe(at('2026-11-22T14:20:00Z', 1))
  })

  test('accepts zero to nine fraction digits and truncates past the sixth', () => {
    const base = at('2026-11-22T14:20:00Z')
    expect(parseTimestamp('2026-11-22T14:20:00Z')).toBe(base)
    expect(parseTimestamp('2026-11-22T14:20:00.1Z')).toBe(base + 100_000)
    expect(parseTimestamp('2026-11-22T14:20:00.12Z')).toBe(base + 120_000)
    expect(parseTimestamp('2026-11-22T14:20:00.123Z')).toBe(base + 123_000)
    expect(parseTimestamp('2026-11-22T14:20:00.1234567Z')).toBe(base + 123_456)
    expect(parseTimestamp('2026-11-22T14:20:00.999999999Z')).toBe(base + 999_999)
    expect(parseTimestamp('2026-11-22T14:20:00.1234567891Z')).toBeNull()
  })

  test('applies a numeric offset to reach UTC', () => {
    expect(parseTimestamp('2026-11-22T19:50:00.5+05:30')).toBe(at('2026-11-22T14:20:00Z', 500_000))
    expect(parseTimestamp('2026-11-22T06:20:00-08:00')).toBe(at('2026-11-22T14:20:00Z'))
    expect(parseTimestamp('2026-11-22T14:20:00+00:00')).toBe(at('2026-11-22T14:20:00Z'))
    expect(parseTimestamp('2026-01-01T02:00:00+05:00')).toBe(at('2025-12-31T21:00:00Z'))
  })

  test('accepts a lowercase t and z', () => {
    expect(parseTimestamp('2026-11-22t14:20:00.000001z')).toBe(at('2026-11-22T14:20:00Z', 1))
  })

  test.each([
    ['a day February does not have', '2026-02-30T00:00:00Z'],
    ['February 29 of a common year', '2026-02-29T00:00:00Z'],
    ['month 13', '2026-13-01T00:00:00Z'],
    ['day zero', '2026-01-00T00:00:00Z'],
    ['hour 24', '2026-11-22T24:00:00Z'],
    ['minute 60', '2026-11-22T23:60:00Z'],
    ['second 60', '2026-11-22T23:59:60Z'],
    ['no offset', '2026-11-22T14:20:00'],
    ['an offset of 24 hours', '2026-11-22T14:20:00+24:00'],
    ['an offset without a colon', '2026-11-22T14:20:00+0530'],
    ['a space for the T', '2026-11-22 14:20:00Z'],
    ['a date alone', '2026-11-22'],
    ['a trailing dot', '2026-11-22T14:20:00.Z'],
    ['garbage', 'yesterday'],
    ['nothing', ''],
    ['a trailing newline', '2026-11-22T14:20:00Z\n'],
  ])('rejects %s', (_what, text) => {
    expect(parseTimestamp(text)).toBeNull()
  })

  test('accepts February 29 of a leap year', () => {
    expect(parseTimestamp('2028-02-29T12:00:00Z')).toBe(at('2028-02-29T12:00:00Z'))
  })

  test('parse(format(us)) is us for any safe microsecond instant from 1970 on', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_US }), (us) => parseTimestamp(formatTimestamp(us)) === us),
      {
        numRuns: 2000,
      },
    )
  })

  test('the same instant written with any offset parses to the same microsecond', () => {
    const offsetMinutes = fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 })
    const instant = fc.integer({ min: US_PER_DAY, max: MAX_US - US_PER_DAY })
    fc.assert(
      fc.property(instant, offsetMinutes, (us, off) => {
        const local = formatTimestamp(us + off * 60_000_000).slice(0, -1)
        const abs = Math.abs(off)
        const suffix = `${off < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`
        return parseTimestamp(local + suffix) === us
      }),
    )
  })
})

describe('calendar days', () => {
  test('utcDay names the UTC day holding an instant', () => {
    expect(utcDay(0)).toBe('1970-01-01')
    expect(utcDay(US_PER_DAY - 1)).toBe('1970-01-01')
    expect(utcDay(US_PER_DAY)).toBe('1970-01-02')
    expect(utcDay(-1)).toBe('1969-12-31')
    expect(utcDay(at('2026-11-22T23:59:59Z', 999_999))).toBe('2026-11-22')
  })

  test('parseDay gives the UTC midnight of a real calendar day, and null otherwise', () => {
    expect(parseDay('2026-11-22')).toBe(at('2026-11-22T00:00:00Z'))
    expect(parseDay('2024-02-29')).toBe(at('2024-02-29T00:00:00Z'))
    for (const bad of ['2023-02-29', '2026-04-31', '2026-13-01', '2026-00-10', '2026-1-01', '2026-11-22T00:00:00Z', '', 'today'])
      expect(parseDay(bad)).toBeNull()
  })

  test('utcDay(parseDay(day)) gives the day back for any day up to 9999', () => {
    const day = fc.date({ min: new Date(0), max: new Date(Date.UTC(9999, 11, 31)), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10))
    fc.assert(fc.property(day, (d) => utcDay(parseDay(d)!) === d))
  })

  test('daysInMonth knows month lengths and the Gregorian leap years', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((m) => daysInMonth(2026, m))).toEqual([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
    expect(daysInMonth(2024, 2)).toBe(29)
    expect(daysInMonth(2000, 2)).toBe(29)
    expect(daysInMonth(1900, 2)).toBe(28)
    expect(daysInMonth(2100, 2)).toBe(28)
  })
})
