import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { collectDrainedBuckets, consumeRateLimit, enforceRateLimit } from '../../src/platform/rate-limit'
import { problemFromAsync } from './fixtures/problem'
import { runFixture, tempDeps, type TempDeps } from './fixtures/temp-deps'

let t: TempDeps
beforeEach(async () => {
  t = await tempDeps()
})
afterEach(() => t.close())

const take = async (bucket: string, limit: number, period: number) => await consumeRateLimit(t.deps.db, t.deps.clock, bucket, limit, period)

describe('consumeRateLimit', () => {
  test('allows exactly `limit` requests in a burst, counting down what remains, then refuses', async () => {
    const decisions = []
    for (let i = 0; i < 7; i++) decisions.push(await take('login:alice', 5, 60))
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false, false])
    expect(decisions.slice(0, 5).map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0])
    expect(decisions[5]!.remaining).toBe(0)
  })

  test('Retry-After is exact: waiting that long is enough, a second less is not', async () => {
    for (let i = 0; i < 5; i++) await take('b', 5, 60)
    const refused = await take('b', 5, 60)
    expect(refused.allowed).toBe(false)
    expect(refused.retryAfterSeconds).toBe(12) // one request every 60/5 seconds
    t.deps.testClock!.advance(refused.retryAfterSeconds - 1)
    expect((await take('b', 5, 60)).allowed).toBe(false)
    t.deps.testClock!.advance(1)
    expect((await take('b', 5, 60)).allowed).toBe(true)
    expect((await take('b', 5, 60)).allowed).toBe(false)
  })

  test('Retry-After is at least one second, even when the next slot is a moment away', async () => {
    await take('fast', 2, 1)
    await take('fast', 2, 1)
    const d = await take('fast', 2, 1) // the next slot opens within half a second
    expect(d.allowed).toBe(false)
    expect(d.retryAfterSeconds).toBe(1)
    t.deps.testClock!.advance(d.retryAfterSeconds)
    expect((await take('fast', 2, 1)).allowed).toBe(true)
  })

  test('for any limit and period, the advised wait is always enough', async () => {
    for (const [limit, period] of [
      [1, 5],
      [1, 3600],
      [3, 30],
      [10, 60],
      [4, 10],
    ] as const) {
      const bucket = `p:${limit}:${period}`
      for (let i = 0; i < limit; i++) expect((await take(bucket, limit, period)).allowed).toBe(true)
      const refused = await take(bucket, limit, period)
      expect(refused.allowed).toBe(false)
      expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1)
      expect(refused.retryAfterSeconds).toBeLessThanOrEqual(Math.ceil(period / limit))
      t.deps.testClock!.advance(refused.retryAfterSeconds)
      expect((await take(bucket, limit, period)).allowed).toBe(true)
    }
  })

  test('a full period of quiet restores the whole burst, and no more', async () => {
    for (let i = 0; i < 3; i++) await take('q', 3, 30)
    t.deps.testClock!.advance(3600)
    expect([await take('q', 3, 30), await take('q', 3, 30), await take('q', 3, 30), await take('q', 3, 30)].map((d) => d.allowed)).toEqual([
      true,
      true,
      true,
      false,
    ])
  })

  test('buckets are independent', async () => {
    expect((await take('ip:203.0.113.0/24', 1, 60)).allowed).toBe(true)
    expect((await take('ip:203.0.113.0/24', 1, 60)).allowed).toBe(false)
    expect((await take('ip:198.51.100.0/24', 1, 60)).allowed).toBe(true)
  })

  test('a limit below one or a period that is not positive is a programming error', async () => {
    await expect(take('x', 0, 60)).rejects.toThrow(RangeError)
    await expect(take('x', 5, 0)).rejects.toThrow(RangeError)
    await expect(take('x', Number.NaN, 60)).rejects.toThrow(RangeError)
  })

  test('enforceRateLimit answers 429 rate_limited with a Retry-After header', async () => {
    await enforceRateLimit(t.deps.db, t.deps.clock, 'e', 1, 60)
    const e = await problemFromAsync(() => enforceRateLimit(t.deps.db, t.deps.clock, 'e', 1, 60))
    expect(e.status).toBe(429)
    expect(e.code).toBe('rate_limited')
    expect(e.headers['Retry-After']).toBe('60')
  })

  test('drained buckets are collected and behave exactly like absent ones', async () => {
    await take('old', 2, 60)
    await take('old', 2, 60)
    await take('recent', 2, 3600)
    t.deps.testClock!.advance(120)
    expect(await collectDrainedBuckets(t.deps.db, t.deps.clock)).toBe(1)
    expect(await t.deps.db.all(sql`SELECT bucket FROM rate_limits`)).toEqual([{ bucket: 'recent' }])
    expect([await take('old', 2, 60), await take('old', 2, 60), await take('old', 2, 60)].map((d) => d.allowed)).toEqual([true, true, false])
  })
})

describe('a rate limit shared by two processes', () => {
  test('two processes hammering one bucket together get exactly `limit` successes', async () => {
    const limit = 40
    const attempts = 300
    const startAt = String(Date.now() + 400)
    const args = [t.dbPath, 'shared:bucket', String(limit), '3600', String(attempts), startAt]
    const [a, b] = await Promise.all([runFixture('rate-limit-hammer.ts', args), runFixture('rate-limit-hammer.ts', args)])
    const results = [a, b].map((r) => {
      expect(r.stderr).toBe('')
      expect(r.code).toBe(0)
      return JSON.parse(r.stdout) as { allowed: number; refused: number; errors: string[] }
    })
    for (const r of results) {
      expect(r.errors).toEqual([])
      expect(r.allowed + r.refused).toBe(attempts)
    }
    expect(results[0]!.allowed + results[1]!.allowed).toBe(limit)
  })
})
