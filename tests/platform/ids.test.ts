import { describe, expect, test } from 'bun:test'
import { TestClock, type Clock } from '../../src/platform/clock'
import { createIdGenerator, isUuid, uuidv7Millis } from '../../src/platform/ids'

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const YEAR_S = 365 * 86_400

describe('UUIDv7 ids', () => {
  test('every id is a lowercase UUID with version 7 and the RFC 9562 variant', () => {
    const newId = createIdGenerator(new TestClock())
    for (let i = 0; i < 1000; i++) {
      const id = newId()
      expect(id).toMatch(V7)
      const bytes = Buffer.from(id.replace(/-/g, ''), 'hex')
      expect(bytes[6]! >> 4).toBe(7)
      expect(bytes[8]! >> 6).toBe(0b10)
    }
  })

  test('ten thousand ids generated in a tight loop are strictly increasing', () => {
    const newId = createIdGenerator(new TestClock())
    const ids: string[] = []
    for (let i = 0; i < 10_000; i++) ids.push(newId())
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true)
    expect(new Set(ids).size).toBe(ids.length)
  })

  test('ids stay strictly increasing when the clock stands still, even past 4096 in one millisecond', () => {
    const frozen: Clock = { nowUs: () => 1_800_000_000_000_000, now: () => new Date(1_800_000_000_000) }
    const newId = createIdGenerator(frozen)
    let previous = ''
    for (let i = 0; i < 10_000; i++) {
      const id = newId()
      expect(id > previous).toBe(true)
      previous = id
    }
    // The counter overflowing carries into the timestamp, a few milliseconds at most.
    expect(uuidv7Millis(previous) - 1_800_000_000_000).toBeGreaterThan(0)
    expect(uuidv7Millis(previous) - 1_800_000_000_000).toBeLessThan(10)
  })

  test('an id carries the timestamp of the service clock, so a clock a year ahead mints next year ids', () => {
    const clock = new TestClock()
    const newId = createIdGenerator(clock)
    const today = uuidv7Millis(newId())
    clock.advance(YEAR_S)
    const before = Math.floor(clock.nowUs() / 1000)
    const id = newId()
    const after = Math.floor(clock.nowUs() / 1000)
    expect(uuidv7Millis(id)).toBeGreaterThanOrEqual(before)
    expect(uuidv7Millis(id)).toBeLessThanOrEqual(after)
    expect(uuidv7Millis(id) - today).toBeGreaterThanOrEqual(YEAR_S * 1000)
    expect(Math.abs(uuidv7Millis(id) - (Date.now() + YEAR_S * 1000))).toBeLessThan(5_000)
  })

  test('an id minted after the clock jumps ahead sorts after every id minted before', () => {
    const clock = new TestClock()
    const newId = createIdGenerator(clock)
    const early = Array.from({ length: 100 }, () => newId())
    clock.advance(0.5)
    const late = newId()
    for (const e of early) expect(late > e).toBe(true)
  })
})

describe('isUuid', () => {
  test('accepts the ids we mint, and v4 UUIDs in either case', () => {
    const newId = createIdGenerator(new TestClock())
    expect(isUuid(newId())).toBe(true)
    expect(isUuid('3b241101-e2bb-4255-8caf-4136c566a962')).toBe(true)
    expect(isUuid('3B241101-E2BB-4255-8CAF-4136C566A962')).toBe(true)
  })

  test.each([
    ['empty', ''],
    ['no dashes', '3b241101e2bb42558caf4136c566a962'],
    ['version nibble 0', '3b241101-e2bb-0255-8caf-4136c566a962'],
    ['version nibble 9', '3b241101-e2bb-9255-8caf-4136c566a962'],
    ['variant nibble c', '3b241101-e2bb-4255-caf0-4136c566a962'],
    ['too short', '3b241101-e2bb-4255-8caf-4136c566a96'],
    ['braces', '{3b241101-e2bb-4255-8caf-4136c566a962}'],
    ['trailing newline', '3b241101-e2bb-4255-8caf-4136c566a962\n'],
    ['non-hex digit', '3b241101-e2bb-4255-8caf-4136c566a96g'],
  ])('rejects a string with %s', (_what, text) => {
    expect(isUuid(text)).toBe(false)
  })
})
