import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { buildDeps } from '../../src/deps'
import { createLogger } from '../../src/platform/logger'
import { startTestApp, TEST_PUBLIC_URL, TEST_SECRET_KEY, type TestApp } from '../support/app'
import { expectProblem } from '../support/problem'

/** The test clock (docs/operations.md "The test clock"): real time plus an offset that only grows. */

const CLOCK = '/api/v1/_test/clock'
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

let app: TestApp
beforeAll(async () => {
  app = await startTestApp()
})
afterAll(() => app.close())

const move = (json: unknown) => app.fetch(CLOCK, { method: 'POST', json })

/** The service's "now" in milliseconds, read by moving the clock by nothing. */
async function serviceNow(): Promise<number> {
  const res = await move({ advance_seconds: 0 })
  expect(res.status).toBe(200)
  const { now } = (await res.json()) as { now: string }
  expect(now).toMatch(TIMESTAMP)
  return Date.parse(now)
}

describe('moving the clock', () => {
  test('advance_seconds moves now forward by at least that much', async () => {
    const before = await serviceNow()
    const res = await move({ advance_seconds: 3600 })
    expect(res.status).toBe(200)
    const { now } = (await res.json()) as { now: string }
    expect(now).toMatch(TIMESTAMP)
    const after = Date.parse(now)
    expect(after - before).toBeGreaterThanOrEqual(3600_000)
    expect(after - before).toBeLessThan(3600_000 + 5_000)
  })

  test('fractional seconds are honoured', async () => {
    const before = await serviceNow()
    const after = Date.parse(((await (await move({ advance_seconds: 1.5 })).json()) as { now: string }).now)
    expect(after - before).toBeGreaterThanOrEqual(1500)
  })

  test('now in the future jumps there', async () => {
    const target = new Date((await serviceNow()) + 3 * 86_400_000)
    target.setUTCMilliseconds(0)
    const res = await move({ now: target.toISOString() })
    expect(res.status).toBe(200)
    const now = Date.parse(((await res.json()) as { now: string }).now)
    expect(now).toBeGreaterThanOrEqual(target.getTime())
    expect(now - target.getTime()).toBeLessThan(5_000)
  })

  test('the moved clock is what the service uses, not only what the endpoint answers', async () => {
    const target = (await serviceNow()) + 10 * 86_400_000
    await move({ now: new Date(target).toISOString() })
    const res = await app.fetch('/api/v1/_test/probes', { method: 'POST', json: { value: 'dated' } })
    const created = Date.parse(((await res.json()) as { created_at: string }).created_at)
    expect(created).toBeGreaterThanOrEqual(target)
  })

  test('time keeps flowing between calls', async () => {
    const a = await serviceNow()
    await Bun.sleep(30)
    const b = await serviceNow()
    expect(b - a).toBeGreaterThanOrEqual(25)
  })

  test('a moment in the past is refused and the clock stays where it was', async () => {
    const before = await serviceNow()
    const doc = await expectProblem(await move({ now: new Date(before - 60_000).toISOString() }), 422, 'validation_failed')
    expect(doc.errors!.map((e) => e.path)).toEqual(['/now'])
    expect(await serviceNow()).toBeGreaterThanOrEqual(before)
  })

  test('both fields, neither field, a negative advance or a malformed instant are refused', async () => {
    const now = new Date(Date.now() + 86_400_000 * 400).toISOString()
    for (const body of [{ advance_seconds: 1, now }, {}, { advance_seconds: -5 }, { now: 'tomorrow' }, { advance_seconds: '60' }])
      await expectProblem(await move(body), 422, 'validation_failed')
  })

  test('a process restarted on the same database keeps the time a test moved it to', async () => {
    const moved = Date.parse(((await (await move({ advance_seconds: 30 * 86_400 })).json()) as { now: string }).now)
    expect(moved).toBeGreaterThan(Date.now() + 29 * 86_400_000)
    const restarted = await buildDeps(
      loadConfig({
        NODE_ENV: 'test',
        PUBLIC_URL: TEST_PUBLIC_URL,
        DATA_DIR: app.dir,
        DATABASE_URL: app.databaseUrl,
        SECRET_KEY: TEST_SECRET_KEY,
        TEST_CLOCK: 'true',
      }),
      { log: createLogger('silent', () => '') },
    )
    try {
      expect(Math.floor(restarted.clock.nowUs() / 1000)).toBeGreaterThanOrEqual(moved)
    } finally {
      await restarted.database.close()
    }
  })
})

describe('running jobs', () => {
  test('a named job runs now and answers the job, the new now and its outcome', async () => {
    const before = await serviceNow()
    const res = await app.fetch('/api/v1/_test/jobs/idempotency.gc/run', { method: 'POST' })
    expect(res.status).toBe(200)
    const body = (await res.json()) as { job: string; outcome: string; now: string }
    expect(body).toMatchObject({ job: 'idempotency.gc', outcome: 'succeeded' })
    expect(body.now).toMatch(TIMESTAMP)
    expect(Date.parse(body.now)).toBeGreaterThanOrEqual(before)
  })

  test('running the same job twice in a row changes nothing the second time', async () => {
    const run = async () => ((await (await app.fetch('/api/v1/_test/jobs/idempotency.gc/run', { method: 'POST' })).json()) as { outcome: string }).outcome
    expect(await run()).toBe('succeeded')
    expect(await run()).toBe('succeeded')
  })

  test('an unknown job answers 404', async () => {
    await expectProblem(await app.fetch('/api/v1/_test/jobs/no.such.job/run', { method: 'POST' }), 404, 'not_found')
  })
})

describe('without TEST_CLOCK', () => {
  test('every test-only route answers 404 as if it did not exist', async () => {
    const prod = await startTestApp({ TEST_CLOCK: 'false' })
    try {
      const id = crypto.randomUUID()
      const calls: [string, string, unknown?][] = [
        ['POST', '/api/v1/_test/clock', { advance_seconds: 60 }],
        ['POST', '/api/v1/_test/jobs/idempotency.gc/run'],
        ['POST', '/api/v1/_test/probes', { value: 'x' }],
        ['GET', `/api/v1/_test/probes/${id}`],
        ['PATCH', `/api/v1/_test/probes/${id}`, { value: 'x' }],
        ['POST', '/api/v1/_test/rate-limit/b', { limit: 1, period_seconds: 1 }],
      ]
      for (const [method, path, json] of calls) {
        const res = await prod.fetch(path, { method, json })
        expect(res.headers.get('allow')).toBeNull()
        await expectProblem(res, 404, 'not_found')
      }
      expect(prod.deps.testClock).toBeNull()
      const doc = (await (await prod.fetch('/api/v1/openapi.json')).json()) as { paths: Record<string, unknown> }
      expect(Object.keys(doc.paths).filter((p) => p.includes('/_test/'))).toEqual([])
    } finally {
      await prod.close()
    }
  })
})
