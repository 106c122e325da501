import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rawSql } from '../../db/client'
import { LocalRateLimiter } from '../../src/platform/rate-limit'
import type { Clock } from '../../src/platform/clock'
import { startTestApp, type TestApp } from '../support/app'
import { onPostgres } from '../support/postgres'

/**
 * The shared rate limit of instances on one PostgreSQL database (db/migrations-pg 0002, its
 * one-bucket path since 0017): decided as the in-process GCRA decides (LocalRateLimiter, SQLite's
 * per-request limits), each of concurrent requests counted once, several buckets all or none.
 * Only on PostgreSQL (scripts/test's second pass).
 */
const T0 = 1_800_000_000_000_000
type Limit = { bucket: string; interval_us: number; period_us: number }

describe.skipIf(!onPostgres)('the shared rate limit on PostgreSQL (rate_take)', () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startTestApp({ LOG_LEVEL: 'silent' })
  })
  afterAll(async () => {
    await app?.close()
  })
  /** The wait in µs rate_take answers (0: taken). */
  const take = async (limits: Limit[], nowUs: number) => {
    const [row] = await rawSql(app.deps.db).values<[number | string]>('SELECT rate_take($1, $2)', JSON.stringify(limits), nowUs)
    return Number(row![0])
  }
  const limit = (bucket: string, perPeriod: number, periodSeconds: number): Limit => ({
    bucket,
    interval_us: (periodSeconds * 1_000_000) / perPeriod,
    period_us: periodSeconds * 1_000_000,
  })

  test('one bucket decides as the in-process GCRA does, request for request, with the same wait', async () => {
    let now = T0
    const clock = { nowUs: () => now, now: () => new Date(now / 1000) } as Clock
    const local = new LocalRateLimiter(clock)
    // A burst, then arrivals now faster and now slower than the rate, some in the same microsecond.
    let seed = 42
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31
    const decisions: string[] = []
    for (let i = 0; i < 400; i++) {
      now += i < 20 ? 0 : Math.floor(random() < 0.2 ? 0 : random() * 4_000_000)
      const wait = await take([limit('token:gcra', 5, 10)], now)
      const reference = local.consume([{ bucket: 'token:gcra', limit: 5, periodSeconds: 10 }])
      expect(wait === 0).toBe(reference.allowed)
      if (!reference.allowed) expect(Math.max(1, Math.ceil(wait / 1_000_000))).toBe(reference.retryAfterSeconds)
      decisions.push(reference.allowed ? 'taken' : 'refused')
    }
    // Both outcomes were met many times.
    expect(decisions.filter((d) => d === 'taken').length).toBeGreaterThan(50)
    expect(decisions.filter((d) => d === 'refused').length).toBeGreaterThan(50)
  })

  test('concurrent first requests of a bucket are each counted once: exactly the limit pass', async () => {
    const waits = await Promise.all(Array.from({ length: 24 }, () => take([limit('token:race', 10, 60)], T0)))
    expect(waits.filter((w) => w === 0)).toHaveLength(10)
    expect(waits.filter((w) => w > 0)).toHaveLength(14)
    // And the bucket holds exactly ten requests' worth: the next is refused for one interval.
    expect(await take([limit('token:race', 10, 60)], T0 + 5_999_999)).toBeGreaterThan(0)
    expect(await take([limit('token:race', 10, 60)], T0 + 6_000_000)).toBe(0)
  })

  test("a first request that meets another's insert of its bucket is counted on top of it, not let through", async () => {
    // Another request's insert of the bucket, not committed yet: rate_take's own insert waits for it.
    const other = new Bun.SQL(app.databaseUrl, { max: 1 })
    const pending = other.begin(async (tx) => {
      await tx`INSERT INTO rate_limits (bucket, tat, expires_at) VALUES ('token:first', ${T0 + 6_000_000}, ${T0 + 6_000_000})`
      const taken = take([limit('token:first', 10, 60)], T0)
      // Waits on an event: the call blocked on the uncommitted row's lock.
      for (;;) {
        const [waiting] = await tx`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT rate_take%'`
        if (waiting.n > 0) break
        await new Promise((resolve) => setImmediate(resolve))
      }
      // Wrapped, so that the transaction commits before the call's answer is awaited.
      return { taken }
    })
    const taken = await (await pending).taken
    await other.close()
    expect(taken).toBe(0)
    const [row] = await rawSql(app.deps.db).values<[number | string]>("SELECT tat FROM rate_limits WHERE bucket = 'token:first'")
    // The other request's interval, then this one's.
    expect(Number(row![0])).toBe(T0 + 12_000_000)
  })

  test('several buckets (a write: its caller and its tenant) take all or none', async () => {
    for (let i = 0; i < 3; i++) expect(await take([limit('tenant-writes:t', 3, 60)], T0)).toBe(0)
    // The tenant's bucket is full: the write is refused, and the caller's bucket is left untouched.
    expect(await take([limit('token:w', 2, 60), limit('tenant-writes:t', 3, 60)], T0)).toBe(20_000_000)
    expect(await take([limit('token:w', 2, 60)], T0)).toBe(0)
    expect(await take([limit('token:w', 2, 60)], T0)).toBe(0)
    expect(await take([limit('token:w', 2, 60)], T0)).toBe(30_000_000)
  })
})
