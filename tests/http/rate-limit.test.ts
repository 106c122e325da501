import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { expectProblem } from '../support/problem'

/** Rate limits answer 429 rate_limited with an integer Retry-After (docs/conventions.md "Rate limits"). */

let app: TestApp
beforeAll(async () => {
  app = await startTestApp()
})
afterAll(() => app.close())

const take = (bucket: string, limit = 3, period_seconds = 60) =>
  app.fetch(`/api/v1/_test/rate-limit/${bucket}`, { method: 'POST', json: { limit, period_seconds } })

const advance = async (seconds: number) =>
  expect((await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } })).status).toBe(200)

describe('rate limits', () => {
  test('three requests in a minute pass, the fourth answers 429 with an integer Retry-After', async () => {
    const remaining: number[] = []
    for (let i = 0; i < 3; i++) {
      const res = await take('three-a-minute')
      expect(res.status).toBe(200)
      remaining.push(((await res.json()) as { remaining: number }).remaining)
    }
    expect(remaining).toEqual([2, 1, 0])

    const refused = await take('three-a-minute')
    const retryAfter = refused.headers.get('retry-after')
    expect(retryAfter).toMatch(/^[1-9]\d*$/)
    expect(Number(retryAfter)).toBeLessThanOrEqual(60)
    await expectProblem(refused, 429, 'rate_limited')
  })

  test('after waiting Retry-After seconds on the test clock the request is allowed again', async () => {
    for (let i = 0; i < 3; i++) expect((await take('wait-and-retry')).status).toBe(200)
    const refused = await take('wait-and-retry')
    expect(refused.status).toBe(429)
    const wait = Number(refused.headers.get('retry-after'))

    await advance(wait)
    expect((await take('wait-and-retry')).status).toBe(200)
    // One slot came back, not the whole burst.
    expect((await take('wait-and-retry')).status).toBe(429)
  })

  test('a refused request does not push the next allowed moment further away', async () => {
    for (let i = 0; i < 3; i++) await take('hammered')
    const first = Number((await take('hammered')).headers.get('retry-after'))
    for (let i = 0; i < 5; i++) expect((await take('hammered')).status).toBe(429)
    const later = Number((await take('hammered')).headers.get('retry-after'))
    expect(later).toBeLessThanOrEqual(first)
  })

  test('after a whole quiet period the full burst is available again', async () => {
    for (let i = 0; i < 3; i++) await take('quiet')
    expect((await take('quiet')).status).toBe(429)
    await advance(60)
    for (let i = 0; i < 3; i++) expect((await take('quiet')).status).toBe(200)
  })

  test('buckets are independent', async () => {
    for (let i = 0; i < 3; i++) await take('bucket-one')
    expect((await take('bucket-one')).status).toBe(429)
    expect((await take('bucket-two')).status).toBe(200)
  })

  test('concurrent requests never take more than the limit', async () => {
    const responses = await Promise.all(Array.from({ length: 12 }, () => take('stampede', 5, 3600)))
    expect(responses.filter((r) => r.status === 200)).toHaveLength(5)
    expect(responses.filter((r) => r.status === 429)).toHaveLength(7)
  })
})
