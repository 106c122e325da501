import { afterEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { join } from 'node:path'
import { withTransaction } from '../../db/client'
import { appendEntry, runHourlyCharges } from '../../src/modules/billing'
import { startTestApp, TEST_PUBLIC_URL, TEST_SECRET_KEY, type TestApp } from '../support/app'
import {
  addServers,
  chargeRowsOf,
  clockTo,
  doubleCharges,
  expectedHourly,
  getBilling,
  ledgerAll,
  micros,
  payer,
  runCharges,
  STARTER_MICROS,
  US_PER_DAY,
  US_PER_HOUR,
  US_PER_MINUTE,
  utcUs,
} from '../support/billing'

/**
 * Exactly one charge per tenant and hour, whatever happens: reruns, two apps on one database,
 * several processes at the same instant, a process killed mid-run, a catch-up after downtime.
 * The clock sits at half past an hour whenever a run happens, so which hours are bookable (H + 1h15m
 * ≤ now) cannot change while a test looks.
 */
const apps: TestApp[] = []
const ENV = { LOG_LEVEL: 'silent', SESSION_IDLE_SECONDS: String(365 * 86400), SESSION_ABSOLUTE_SECONDS: String(365 * 86400) }
async function freshApp(env: Record<string, string> = {}) {
  const app = await startTestApp({ ...ENV, ...env })
  apps.push(app)
  return app
}
afterEach(async () => {
  for (const a of apps.splice(0).reverse()) await a.close()
})

const H0 = utcUs(2027, 3, 1, 8)
/** The latest hour the job may book at `nowUs`. */
const lastBookable = (nowUs: number) => Math.floor((nowUs - 75 * US_PER_MINUTE) / US_PER_HOUR) * US_PER_HOUR
const hoursFrom = (from: number, to: number) => Array.from({ length: (to - from) / US_PER_HOUR + 1 }, (_, i) => from + i * US_PER_HOUR)

/** Each tenant has one charge for every hour in [from, to] and nothing else; its balance adds up. */
async function expectEveryHourOnce(app: TestApp, tenants: { id: string; servers: number }[], from: number, to: number) {
  expect(await doubleCharges(app)).toEqual([])
  for (const t of tenants) {
    const rows = await chargeRowsOf(app, t.id)
    expect(rows.map((r) => r.charge_hour)).toEqual(hoursFrom(from, to))
    for (const r of rows) expect(r.amount_micros).toBe(-expectedHourly(STARTER_MICROS, t.servers, 31))
    const ledger = (await app.deps.db.all(sql`SELECT seq, amount_micros, balance_after_micros FROM ledger_entries WHERE tenant_id = ${t.id} ORDER BY seq`)) as {
      seq: number
      amount_micros: number
      balance_after_micros: number
    }[]
    let sum = 0
    ledger.forEach((e, i) => {
      sum += e.amount_micros
      expect({ seq: e.seq, balance_after: e.balance_after_micros }).toEqual({ seq: i + 1, balance_after: sum })
    })
    const bal = (await app.deps.db.get(sql`SELECT balance_micros FROM balances WHERE tenant_id = ${t.id}`)) as { balance_micros: number } | null
    expect(bal?.balance_micros ?? 0).toBe(sum)
  }
}

/** Paying tenants with `servers[i]` servers each, enrolled at H0 + 10 min. */
async function payingTenants(app: TestApp, servers: number[]) {
  await clockTo(app, H0 + 10 * US_PER_MINUTE)
  const out: { id: string; servers: number; owner: Awaited<ReturnType<typeof payer>> }[] = []
  for (const n of servers) {
    const owner = await payer(app, 'starter')
    await addServers(app, owner.tenantId, n)
    out.push({ id: owner.tenantId, servers: n, owner })
  }
  return out
}

function workerEnv(app: TestApp) {
  return {
    ...process.env,
    NODE_ENV: 'test',
    TEST_CLOCK: 'true',
    PUBLIC_URL: TEST_PUBLIC_URL,
    SECRET_KEY: TEST_SECRET_KEY,
    DATA_DIR: app.dir,
    DATABASE_URL: app.databaseUrl,
    LOG_LEVEL: 'error',
  }
}
const WORKER = join(import.meta.dir, '../support/billing-worker.ts')

describe('exactly one charge per tenant and hour', () => {
  test('running the job again for the same period changes nothing', async () => {
    const app = await freshApp()
    const tenants = await payingTenants(app, [1, 4])
    const now = await clockTo(app, H0 + 5 * US_PER_HOUR + 30 * US_PER_MINUTE)
    await runCharges(app)
    const before = await getBilling(app, tenants[1]!.owner)
    for (let i = 0; i < 3; i++) expect((await runCharges(app)).detail).toContain('booked 0 hours')
    await expectEveryHourOnce(app, tenants, H0, lastBookable(now))
    expect((await getBilling(app, tenants[1]!.owner)).balance_usd).toBe(before.balance_usd)
    expect(await ledgerAll(app, tenants[1]!.owner)).toHaveLength(5)
  })

  test('two apps on the same database running billing.charge at the same time book every hour once', async () => {
    const a = await freshApp()
    const tenants = await payingTenants(a, [2, 3, 1])
    const b = await freshApp({ DATABASE_URL: a.databaseUrl, DATA_DIR: a.dir })
    const target = H0 + 30 * US_PER_HOUR + 30 * US_PER_MINUTE
    await clockTo(a, target)
    await clockTo(b, target + 1000)
    const runs = await Promise.all([a, b, a, b].map((app) => app.fetch('/api/v1/_test/jobs/billing.charge/run', { method: 'POST' })))
    // Each run either did the work, found nothing left, or was told the other process holds the job.
    for (const r of runs) expect([200, 409]).toContain(r.status)
    expect(runs.some((r) => r.status === 200)).toBe(true)
    await expectEveryHourOnce(a, tenants, H0, lastBookable(target))
    // Both apps answer the same ledger.
    expect((await ledgerAll(b, tenants[0]!.owner)).map((r) => r.id)).toEqual((await ledgerAll(a, tenants[0]!.owner)).map((r) => r.id))
  })

  test('four processes starting the charge run at the same instant, with no job lease between them, book every hour once', async () => {
    const app = await freshApp()
    const tenants = await payingTenants(app, [1, 2, 3, 5, 8])
    const now = await clockTo(app, H0 + 2 * US_PER_DAY + 30 * US_PER_MINUTE)
    const startAt = Date.now() + 1500
    const procs = Array.from({ length: 4 }, () =>
      Bun.spawn([process.execPath, 'run', WORKER, String(startAt)], { env: workerEnv(app), stdout: 'pipe', stderr: 'pipe' }),
    )
    const codes = await Promise.all(procs.map((p) => p.exited))
    const outs = await Promise.all(procs.map(async (p) => (await new Response(p.stdout).text()) + (await new Response(p.stderr).text())))
    expect({ codes, outs }).toMatchObject({ codes: [0, 0, 0, 0] })
    await expectEveryHourOnce(app, tenants, H0, lastBookable(now))
    expect((await runCharges(app)).detail).toContain('(0 charges)')
  }, 30_000)

  test('a charge another process booked for one tenant of an hour stays the only one: the database refuses a second, the run books the rest', async () => {
    const app = await freshApp()
    const [first, second] = await payingTenants(app, [2, 3])
    const now = await clockTo(app, H0 + 2 * US_PER_HOUR + 30 * US_PER_MINUTE)
    // The crashed run's leftover: tenant one's charge for H0, committed, the watermark not moved.
    const book = async () =>
      await withTransaction(app.deps.db, (tx) =>
        appendEntry(tx, app.deps, {
          tenantId: first!.id,
          kind: 'charge',
          amountMicros: -expectedHourly(STARTER_MICROS, 2, 31),
          occurredAt: H0,
          chargeHour: H0,
          chargeDay: '2027-03-01',
          detail: 'booked by the other process',
        }),
      )
    const leftover = await book()
    await expect(book()).rejects.toThrow(/UNIQUE constraint failed/)
    await runCharges(app)
    await expectEveryHourOnce(app, [first!, second!], H0, lastBookable(now))
    const h0Rows = (await ledgerAll(app, first!.owner, { kind: 'charge' })).filter((r) => r.charge_hour === '2027-03-01T08:00:00.000000Z')
    expect(h0Rows.map((r) => r.id)).toEqual([leftover.id])
  })

  test('a process killed in the middle of a long catch-up leaves whole hours behind; the next run books the rest, each hour once', async () => {
    const app = await freshApp()
    const tenants = await payingTenants(app, [1, 2, 3])
    const now = await clockTo(app, H0 + 12 * US_PER_DAY + 30 * US_PER_MINUTE) // 289 hours due
    const proc = Bun.spawn([process.execPath, 'run', WORKER], { env: workerEnv(app), stdout: 'pipe', stderr: 'pipe' })
    const charges = async () => ((await app.deps.db.get(sql`SELECT count(*) AS n FROM ledger_entries WHERE kind = 'charge'`)) as { n: number }).n
    const deadline = Date.now() + 20_000
    while ((await charges()) < 9 && Date.now() < deadline) await Bun.sleep(2)
    proc.kill('SIGKILL')
    await proc.exited
    const booked = await charges()
    expect(booked).toBeGreaterThan(0)
    expect(booked).toBeLessThan(3 * ((lastBookable(now) - H0) / US_PER_HOUR + 1)) // it really was stopped before the end
    // Three tenants fit in one batch, so each hour is one transaction here: booked for all three or for none.
    const perHour = (await app.deps.db.all(sql`SELECT charge_hour, count(*) AS n FROM ledger_entries WHERE kind = 'charge' GROUP BY charge_hour`)) as {
      n: number
    }[]
    for (const h of perHour) expect(h.n).toBe(3)

    await runCharges(app)
    await expectEveryHourOnce(app, tenants, H0, lastBookable(now))
  }, 30_000)

  test('after three days of downtime one run books every missed hour once, and the next hour only when it is due', async () => {
    const app = await freshApp()
    const tenants = await payingTenants(app, [3])
    const now = await clockTo(app, H0 + 3 * US_PER_DAY + 30 * US_PER_MINUTE)
    const r = await runCharges(app)
    const last = lastBookable(now)
    expect(r.detail).toContain(`booked ${(last - H0) / US_PER_HOUR + 1} hours`)
    await expectEveryHourOnce(app, tenants, H0, last)
    const rows = await ledgerAll(app, tenants[0]!.owner)
    expect(rows).toHaveLength(3 * 24 - 1 + 1)
    expect(micros((await getBilling(app, tenants[0]!.owner)).balance_usd)).toBe(-rows.length * expectedHourly(STARTER_MICROS, 3, 31))

    await clockTo(app, now + 20 * US_PER_MINUTE) // still half an hour short of the next bookable hour
    await runCharges(app)
    await expectEveryHourOnce(app, tenants, H0, last)
    await clockTo(app, now + US_PER_HOUR)
    await runCharges(app)
    await expectEveryHourOnce(app, tenants, H0, last + US_PER_HOUR)
  })
})

describe('an hour booked in batches, each its own transaction', () => {
  const chargesOfHour = async (app: TestApp, h: number) =>
    (
      (await app.deps.db.all(sql`SELECT tenant_id FROM ledger_entries WHERE kind = 'charge' AND charge_hour = ${h} ORDER BY tenant_id`)) as {
        tenant_id: string
      }[]
    ).map((r) => r.tenant_id)
  const watermark = async (app: TestApp) =>
    ((await app.deps.db.get(sql`SELECT charged_until FROM billing_state WHERE key = 'charges'`)) as { charged_until: number } | null)?.charged_until

  test('more tenants than one batch: every tenant is booked once over several transactions, and a second run books nothing', async () => {
    const app = await freshApp()
    const tenants = await payingTenants(app, [1, 2, 3, 1, 2])
    const now = await clockTo(app, H0 + 2 * US_PER_HOUR + 30 * US_PER_MINUTE) // H0 and H0 + 1h due
    const held: number[] = []
    const detail = await runHourlyCharges(app.deps, { batchTenants: 2, batchBudgetMs: 60_000, onTransaction: (ms) => held.push(ms) })
    // Two hours × three batches (2 + 2 + 1 tenants), each hour's watermark move, the freeze check.
    expect(detail).toContain('booked 2 hours (10 charges)')
    expect(detail).toContain('6 batches')
    expect(held).toHaveLength(6 + 2 + 1)
    await expectEveryHourOnce(app, tenants, H0, lastBookable(now))
    expect(await runHourlyCharges(app.deps, { batchTenants: 2, batchBudgetMs: 60_000 })).toContain('booked 0 hours (0 charges)')
    await expectEveryHourOnce(app, tenants, H0, lastBookable(now))
  })

  test('a run that ends between two batches leaves the hour open; the next run books the tenants left, each once', async () => {
    const app = await freshApp()
    const tenants = await payingTenants(app, [1, 2, 3, 4, 5])
    const now = await clockTo(app, H0 + 1 * US_PER_HOUR + 30 * US_PER_MINUTE) // H0 due
    expect(await watermark(app)).toBeUndefined()
    const first = await runHourlyCharges(app.deps, { batchTenants: 2, maxBatches: 1, batchBudgetMs: 60_000 })
    expect(first).toContain('stopped after 1 batches (2 charges)')
    // The first batch is durable with its own transaction; the watermark has not moved past H0.
    const sorted = tenants.map((t) => t.id).sort()
    expect(await chargesOfHour(app, H0)).toEqual(sorted.slice(0, 2))
    expect(await watermark(app)).toBeUndefined()
    // Another interrupted run resumes with the next batch.
    await runHourlyCharges(app.deps, { batchTenants: 2, maxBatches: 1, batchBudgetMs: 60_000 })
    expect(await chargesOfHour(app, H0)).toEqual(sorted.slice(0, 4))
    // Through the job, as the scheduler runs it: the rest of the hour, then the watermark.
    expect((await runCharges(app)).detail).toContain('booked 1 hours (1 charges)')
    expect(await watermark(app)).toBe(H0 + US_PER_HOUR)
    await expectEveryHourOnce(app, tenants, H0, lastBookable(now))
  })
})
