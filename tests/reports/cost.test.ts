import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { addMember, call, insertServer, mintPat, newTenant, type Caller, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { expectProblem } from '../support/problem'
import { addDays, localDate } from './support'

/**
 * Issue 34 finding 3, one tenant stalling the service with reports: a report's reads do not grow
 * with servers, days or periods (counted at the database driver, as statements executed), and a
 * report computed anew counts against the caller (token, or the member behind a browser session)
 * and the tenant, 429 with Retry-After past either (docs/reports.md "Cost", docs/conventions.md
 * "Rate limits"). No timing: bench/reports.ts measures what this buys.
 */

const PER_CALLER = 3
const PER_TENANT = 5

let app: TestApp
let today: string
beforeAll(async () => {
  app = await startTestApp({
    LOG_LEVEL: 'silent',
    RATE_LIMIT_EXPENSIVE_READS_PER_MINUTE: String(PER_CALLER),
    RATE_LIMIT_TENANT_EXPENSIVE_READS_PER_MINUTE: String(PER_TENANT),
  })
  today = localDate('UTC', app.deps.clock.nowUs())
})
afterAll(() => app.close())

const advance = async (seconds: number) =>
  expect((await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } })).status).toBe(200)

/** A range of `days` days ending `back` days before today: a different range for each `back`, so never a cached answer. */
const range = (back: number, days = 1) => `from=${addDays(today, -back - days + 1)}&to=${addDays(today, -back)}`

async function expect429(res: Response): Promise<number> {
  const header = res.headers.get('retry-after')
  expect(header).toMatch(/^[1-9]\d*$/)
  await expectProblem(res, 429, 'rate_limited')
  return Number(header)
}

/**
 * Statements the database executed: on SQLite every `all`, `get`, `values` and `run` of a bun:sqlite
 * statement made after this file loaded (prepare and query are wrapped so that each statement
 * counts its own executions; nothing else changes), on PostgreSQL the pool's own statement
 * counter (db/pg/pool.ts). The app runs in this process; nothing else runs meanwhile (jobs are
 * off), bar a timer's odd statement.
 */
let executed = 0
const counting = new WeakSet<object>()
function counted<T>(statement: T): T {
  const s = statement as Record<string, unknown>
  if (counting.has(s)) return statement
  counting.add(s)
  for (const name of ['all', 'get', 'values', 'run']) {
    const run = s[name]
    if (typeof run !== 'function') continue
    s[name] = (...args: unknown[]) => {
      executed++
      return run.apply(s, args)
    }
  }
  return statement
}
const originalPrepare = Database.prototype.prepare
const originalQuery = Database.prototype.query
Database.prototype.prepare = function (this: Database, ...args: Parameters<Database['prepare']>) {
  return counted(originalPrepare.apply(this, args))
} as Database['prepare']
Database.prototype.query = function (this: Database, ...args: Parameters<Database['query']>) {
  return counted(originalQuery.apply(this, args))
} as Database['query']
afterAll(() => {
  Database.prototype.prepare = originalPrepare
  Database.prototype.query = originalQuery
})

async function statementsDuring(fn: () => Promise<void>): Promise<number> {
  const pg = app.deps.database.postgres?.counters
  const before = pg ? pg.statements : executed
  await fn()
  return (pg ? pg.statements : executed) - before
}

async function reportStatements(caller: Caller, report: string, qs: string): Promise<number> {
  return statementsDuring(async () => {
    const res = await call(app, 'GET', `/reports/${report}?${qs}`, caller)
    expect({ status: res.status, body: (await res.text()).slice(0, 300) }).toMatchObject({ status: 200 })
  })
}

describe("a report's reads", () => {
  beforeAll(async () => {
    // A rollup run settles the hourly buckets older than the raw history (settledHourlyUntil):
    // those days are stored once as daily aggregates and read as such afterwards.
    expect((await app.fetch('/api/v1/_test/jobs/metrics.rollup/run', { method: 'POST' })).status).toBe(200)
  })

  for (const report of ['margin', 'utilisation', 'earnings', 'spend']) {
    test(`${report}: as many for 12 servers as for one; once a range's days are stored, as many for 60 days by day as for one day`, async () => {
      const small = await newTenant(app, `${report}-small`)
      await insertServer(app, small.tenantId, 'only')
      const big = await newTenant(app, `${report}-big`)
      for (let i = 0; i < 12; i++) await insertServer(app, big.tenantId, `rig ${i}`)
      const oneDay = await reportStatements(small, report, range(0))
      // The first read of 60 days stores their aggregates, a week per query: the same for 1 server or 12.
      const oneServer = await reportStatements(small, report, `${range(0, 60)}&group_by=day`)
      const twelve = await reportStatements(big, report, `${range(0, 60)}&group_by=day`)
      // Read again (by week: not the cached answer), the stored days cost one read for the lot.
      const again = await reportStatements(big, report, `${range(0, 60)}&group_by=week`)
      // A timer of the app (a group commit) may slip a statement in: a small allowance, far below
      // one read per server or per day (12 × 60 here).
      const grew = twelve > oneServer + 4 || again > oneDay + 4
      expect({ oneDay, oneServer, twelve, again, grew }).toMatchObject({ grew: false })
      await advance(120)
    })
  }
})

describe('every report refuses a range longer than 366 days', () => {
  for (const report of ['margin', 'utilisation', 'earnings', 'spend'])
    test(`${report}: 367 days is 422 range_too_large at /from, before any work or count`, async () => {
      const owner = await newTenant(app, `${report}-range`)
      for (let i = 0; i < PER_CALLER + 1; i++) {
        const res = await call(app, 'GET', `/reports/${report}?${range(0, 367)}`, owner)
        const body = await expectProblem(res, 422, 'validation_failed')
        expect(body.errors?.[0]).toMatchObject({ path: '/from', code: 'range_too_large' })
      }
    })
})

describe('expensive reads are limited per caller and per tenant', () => {
  test("a member's browser session past the limit gets 429 with Retry-After; answers from the cache still come", async () => {
    const owner = await newTenant(app, 'hammer')
    for (let back = 0; back < PER_CALLER; back++) expect((await call(app, 'GET', `/reports/margin?${range(back)}`, owner)).status).toBe(200)
    const wait = await expect429(await call(app, 'GET', `/reports/margin?${range(PER_CALLER)}`, owner))
    expect(wait).toBeLessThanOrEqual(Math.ceil(60 / PER_CALLER))
    // Shifting `from` does not help, nor does another report: each is computed anew.
    await expect429(await call(app, 'GET', `/reports/utilisation?${range(PER_CALLER + 1)}`, owner))
    // A cached answer costs nothing and counts nothing.
    expect((await call(app, 'GET', `/reports/margin?${range(0)}`, owner)).status).toBe(200)
    // Cheap reads are not expensive reads.
    expect((await call(app, 'GET', '/servers', owner)).status).toBe(200)
    await advance(wait)
    expect((await call(app, 'GET', `/reports/margin?${range(PER_CALLER)}`, owner)).status).toBe(200)
    await expect429(await call(app, 'GET', `/reports/margin?${range(PER_CALLER + 2)}`, owner))
    await advance(60)
  })

  test('each token and member has its own count, and the tenant one for them all; another tenant is untouched', async () => {
    const owner = await newTenant(app, 'many-callers')
    const viewer = await addMember(app, owner.tenantId, 'viewer')
    const pat = await mintPat(app, owner, { scopes: ['billing:read', 'servers:read'] })
    let back = 0
    for (let i = 0; i < PER_CALLER; i++) expect((await call(app, 'GET', `/reports/margin?${range(back++)}`, pat.token)).status).toBe(200)
    await expect429(await call(app, 'GET', `/reports/margin?${range(back++)}`, pat.token))
    // The owner's session is another caller, but the tenant has PER_TENANT in all.
    for (let i = PER_CALLER; i < PER_TENANT; i++) expect((await call(app, 'GET', `/reports/spend?${range(back++)}`, owner)).status).toBe(200)
    await expect429(await call(app, 'GET', `/reports/spend?${range(back++)}`, viewer))
    const stranger = await newTenant(app, 'bystander')
    expect((await call(app, 'GET', `/reports/margin?${range(0)}`, stranger)).status).toBe(200)
    await advance(60)
  })

  test('a limit of 0 turns it off', async () => {
    const open = await startTestApp({ LOG_LEVEL: 'silent', RATE_LIMIT_EXPENSIVE_READS_PER_MINUTE: '0', RATE_LIMIT_TENANT_EXPENSIVE_READS_PER_MINUTE: '0' })
    try {
      const owner: Member = await newTenant(open, 'unlimited')
      const day = localDate('UTC', open.deps.clock.nowUs())
      for (let back = 0; back < 12; back++) {
        const d = addDays(day, -back)
        expect((await call(open, 'GET', `/reports/margin?from=${d}&to=${d}`, owner)).status).toBe(200)
      }
    } finally {
      await open.close()
    }
  })
})
