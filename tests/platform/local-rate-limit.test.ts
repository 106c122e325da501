import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { LocalRateLimiter, requestRateLimiter } from '../../src/platform/rate-limit'
import { tempDeps, type TempDeps } from './fixtures/temp-deps'

/** The in-process GCRA behind the per-request limits: the same answers as the database one. */

let t: TempDeps
let limiter: LocalRateLimiter
beforeEach(async () => {
  t = await tempDeps()
  limiter = new LocalRateLimiter(t.deps.clock)
})
afterEach(() => t.close())

const take = (bucket: string, limit: number, period: number) => limiter.consume([{ bucket, limit, periodSeconds: period }])

describe('LocalRateLimiter', () => {
  test('allows a burst of `limit`, counting down, then refuses with an exact Retry-After', () => {
    const d = Array.from({ length: 6 }, () => take('a', 5, 60))
    expect(d.map((x) => x.allowed)).toEqual([true, true, true, true, true, false])
    expect(d.slice(0, 5).map((x) => x.remaining)).toEqual([4, 3, 2, 1, 0])
    expect(d[5]!.retryAfterSeconds).toBe(12)
    t.deps.testClock!.advance(11)
    expect(take('a', 5, 60).allowed).toBe(false)
    t.deps.testClock!.advance(1)
    expect(take('a', 5, 60).allowed).toBe(true)
    expect(take('a', 5, 60).allowed).toBe(false)
  })

  test('a refusal does not push the next allowed moment further away', () => {
    for (let i = 0; i < 2; i++) take('b', 2, 60)
    const first = take('b', 2, 60).retryAfterSeconds
    for (let i = 0; i < 10; i++) take('b', 2, 60)
    expect(take('b', 2, 60).retryAfterSeconds).toBeLessThanOrEqual(first)
  })

  test('several buckets are taken together or not at all, with the longest wait', () => {
    const both = [
      { bucket: 'token', limit: 10, periodSeconds: 60 },
      { bucket: 'tenant', limit: 2, periodSeconds: 60 },
    ]
    expect(limiter.consume(both).allowed).toBe(true)
    expect(limiter.consume(both).allowed).toBe(true)
    const refused = limiter.consume(both)
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 30 })
    // The token bucket gave up only the two allowed requests: eight remain.
    const alone = Array.from({ length: 9 }, () => take('token', 10, 60).allowed)
    expect(alone).toEqual([...Array(8).fill(true), false])
  })

  test('drained buckets are swept as the map grows, and behave like absent ones', () => {
    for (let i = 0; i < 2000; i++) take(`ip:${i}`, 1, 1)
    t.deps.testClock!.advance(2)
    // The map sweeps once it doubles past the 1024 live buckets of the last sweep.
    for (let i = 0; i < 100; i++) take(`late:${i}`, 1, 60)
    expect(limiter.size).toBeLessThanOrEqual(100)
    expect(take('ip:1', 1, 1).allowed).toBe(true)
  })

  test('each Deps has its own limiter', async () => {
    const other = await tempDeps()
    try {
      expect(requestRateLimiter(t.deps)).toBe(requestRateLimiter(t.deps))
      expect(requestRateLimiter(other.deps)).not.toBe(requestRateLimiter(t.deps))
    } finally {
      await other.close()
    }
  })
})
