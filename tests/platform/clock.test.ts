import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { buildDeps } from '../../src/deps'
import { realNowUs, SystemClock, TestClock } from '../../src/platform/clock'
import { createLogger } from '../../src/platform/logger'
import { startTestApp, TEST_PUBLIC_URL, TEST_SECRET_KEY, type TestApp } from '../support/app'

const DAY_S = 86_400

describe('the system clock', () => {
  test('reads real time with microsecond resolution', () => {
    const clock = new SystemClock()
    const us = clock.nowUs()
    expect(Number.isSafeInteger(us)).toBe(true)
    expect(Math.abs(us / 1000 - Date.now())).toBeLessThan(1000)
    expect(Math.abs(clock.now().getTime() - Date.now())).toBeLessThan(1000)
  })
})

describe('the test clock', () => {
  test('starts at real time and keeps flowing with it', async () => {
    const clock = new TestClock()
    const a = clock.nowUs()
    expect(Math.abs(a - realNowUs())).toBeLessThan(1_000_000)
    await Bun.sleep(25)
    expect(clock.nowUs() - a).toBeGreaterThanOrEqual(20_000)
  })

  test('advance moves it forward by whole or fractional seconds and reports the new now', () => {
    const clock = new TestClock()
    const before = clock.nowUs()
    const reported = clock.advance(3600)
    const after = clock.nowUs()
    expect(clock.offsetUs).toBe(3_600_000_000)
    expect(reported - before).toBeGreaterThanOrEqual(3_600_000_000)
    expect(after - before).toBeLessThan(3_601_000_000)
    clock.advance(0.25)
    expect(clock.offsetUs).toBe(3_600_250_000)
  })

  test('never moves backward: a negative advance or a past target throws RangeError and changes nothing', () => {
    const clock = new TestClock()
    clock.advance(60)
    expect(() => clock.advance(-1)).toThrow(RangeError)
    expect(() => clock.advance(Number.NaN)).toThrow(RangeError)
    expect(() => clock.setNow(clock.nowUs() - 1_000_000)).toThrow(RangeError)
    expect(clock.offsetUs).toBe(60_000_000)
  })

  test('setNow jumps to a future instant', () => {
    const clock = new TestClock()
    const target = realNowUs() + 30 * DAY_S * 1_000_000
    const now = clock.setNow(target)
    expect(now).toBeGreaterThanOrEqual(target)
    expect(now - target).toBeLessThan(1_000_000)
    expect(Math.abs(clock.now().getTime() - target / 1000)).toBeLessThan(1000)
  })

  test('tells its owner every new offset', () => {
    const seen: number[] = []
    const clock = new TestClock(5, (offset) => {
      seen.push(offset)
    })
    clock.advance(1)
    clock.advance(2)
    expect(seen).toEqual([1_000_005, 3_000_005])
  })
})

describe('the test clock across a restart', () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startTestApp()
  })
  afterAll(() => app.close())

  test('a restarted service on the same database keeps the time a test moved it to', async () => {
    const clock = app.deps.testClock!
    clock.advance(7 * DAY_S)
    await clock.saved
    const movedTo = clock.nowUs()
    const config = loadConfig({
      NODE_ENV: 'test',
      PUBLIC_URL: TEST_PUBLIC_URL,
      DATA_DIR: app.dir,
      DATABASE_URL: app.databaseUrl,
      SECRET_KEY: TEST_SECRET_KEY,
      TEST_CLOCK: 'true',
    })
    const restarted = await buildDeps(config, { log: createLogger('silent', () => '') })
    try {
      expect(restarted.testClock!.offsetUs).toBe(clock.offsetUs)
      expect(restarted.clock.nowUs()).toBeGreaterThanOrEqual(movedTo)
      const real = realNowUs()
      expect(restarted.clock.nowUs() - real).toBeGreaterThanOrEqual(7 * DAY_S * 1_000_000)
      // And it keeps moving forward from there, saving again for the next restart.
      restarted.testClock!.advance(DAY_S)
      await restarted.testClock!.saved
      const again = await buildDeps(config, { log: createLogger('silent', () => '') })
      expect(again.testClock!.offsetUs).toBe(8 * DAY_S * 1_000_000)
      await again.database.close()
    } finally {
      await restarted.database.close()
    }
  })

  test('without TEST_CLOCK a restart runs on real time whatever offset was saved', async () => {
    const config = loadConfig({
      NODE_ENV: 'test',
      DATA_DIR: app.dir,
      DATABASE_URL: app.databaseUrl,
      SECRET_KEY: TEST_SECRET_KEY,
    })
    const real = await buildDeps(config, { log: createLogger('silent', () => '') })
    try {
      expect(real.testClock).toBeNull()
      expect(Math.abs(real.clock.nowUs() - realNowUs())).toBeLessThan(1_000_000)
    } finally {
      await real.database.close()
    }
  })
})
