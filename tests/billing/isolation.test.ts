import { afterEach, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { call } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import {
  addServers,
  adjust,
  chargeRowsOf,
  clockTo,
  expectedHourly,
  getBilling,
  payer,
  STARTER_MICROS,
  US_PER_HOUR,
  US_PER_MINUTE,
  US_PER_SECOND,
  utcUs,
} from '../support/billing'

/**
 * Issue 34, "Jobs isolate tenants", billing.charge (docs/billing.md "A tenant whose charge fails"):
 * one tenant whose hourly charge cannot be booked must not stop the other tenants' charges, the
 * hour it could not book is booked on a later run (never skipped, never twice), and it is not
 * retried at every run. The poison comes through the operator's real adjustment verb: a balance
 * driven to the very end of the money range, so the next charge would leave it (RangeError in the
 * ledger); the tenant is the first one of the hour (tenants are booked in id order).
 */
const apps: TestApp[] = []
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close()
})

const LAG = 75 * US_PER_MINUTE
type Run = { outcome: string; detail: string | null }
async function runJob(app: TestApp): Promise<Run> {
  const res = await app.fetch('/api/v1/_test/jobs/billing.charge/run', { method: 'POST' })
  const text = await res.text()
  expect({ status: res.status, text }).toMatchObject({ status: 200 })
  return JSON.parse(text) as Run
}
const owedRows = async (app: TestApp) => (await app.deps.db.all(sql`SELECT key FROM billing_state WHERE key LIKE 'owed:%' ORDER BY key`)) as { key: string }[]

test('a tenant whose charge fails is left owed: the tenants after it are charged, the run is partial, it waits out a backoff, and once it can be charged every owed hour is booked exactly once', async () => {
  const app = await startTestApp({ LOG_LEVEL: 'silent' })
  apps.push(app)
  const h = utcUs(2027, 4, 14, 7)
  await clockTo(app, h + 5 * US_PER_MINUTE)
  const [poisoned, healthy] = [await payer(app, 'starter', 'first'), await payer(app, 'starter', 'second')].sort((a, b) => (a.tenantId < b.tenantId ? -1 : 1))
  await addServers(app, poisoned!.tenantId, 1)
  await addServers(app, healthy!.tenantId, 2)
  // 9 × -1,000,000,000 USD and -7,199,254.740991 USD: the balance is -(2^53 - 1) micro-USD, and any charge would pass it.
  for (let i = 0; i < 9; i++) await adjust(app, poisoned!.tenantId, '-1000000000', 'poison')
  await adjust(app, poisoned!.tenantId, '-7199254.740991', 'poison')

  await clockTo(app, h + LAG + 2 * US_PER_SECOND)
  const first = await runJob(app)
  expect(first.outcome).toBe('partial')
  expect(first.detail).toContain(`1 tenants failed: ${poisoned!.tenantId} (balance out of range)`)
  expect(first.detail).toContain('1 newly owed')
  const healthyCharge = expectedHourly(STARTER_MICROS, 2, 30)
  expect((await chargeRowsOf(app, healthy!.tenantId)).map((r) => [r.charge_hour, r.amount_micros])).toEqual([[h, -healthyCharge]])
  expect(await chargeRowsOf(app, poisoned!.tenantId)).toEqual([])
  expect(await owedRows(app)).toEqual([{ key: `owed:${poisoned!.tenantId}:${h}` }])

  // The next run, a minute later (inside the first backoff): the poisoned tenant is not tried again.
  await clockTo(app, h + LAG + 30 * US_PER_SECOND)
  const second = await runJob(app)
  expect(second).toMatchObject({ outcome: 'succeeded' })
  expect(second.detail).toContain('1 tenants waiting out a backoff after failing')
  expect(await owedRows(app)).toHaveLength(1)

  // An hour later, still poisoned: tried once more (fails again), and its new hour is owed too; the healthy tenant's hour is booked.
  await clockTo(app, h + US_PER_HOUR + LAG + 2 * US_PER_SECOND)
  const third = await runJob(app)
  expect(third.outcome).toBe('partial')
  expect((await chargeRowsOf(app, healthy!.tenantId)).map((r) => r.charge_hour)).toEqual([h, h + US_PER_HOUR])
  expect((await owedRows(app)).map((r) => r.key)).toEqual([`owed:${poisoned!.tenantId}:${h}`, `owed:${poisoned!.tenantId}:${h + US_PER_HOUR}`])

  // The operator repairs the balance; after the backoff (2 min now) the next run books both owed hours, once each.
  await adjust(app, poisoned!.tenantId, '1000000000', 'repair')
  await clockTo(app, h + US_PER_HOUR + LAG + 5 * US_PER_MINUTE)
  const fourth = await runJob(app)
  expect(fourth).toMatchObject({ outcome: 'succeeded' })
  expect(fourth.detail).toContain('owed hours: 2 of 2 booked')
  const one = expectedHourly(STARTER_MICROS, 1, 30)
  expect((await chargeRowsOf(app, poisoned!.tenantId)).map((r) => [r.charge_hour, r.amount_micros])).toEqual([
    [h, -one],
    [h + US_PER_HOUR, -one],
  ])
  expect(await owedRows(app)).toEqual([])

  // Nothing is booked twice by later runs, for either tenant.
  await clockTo(app, h + US_PER_HOUR + LAG + 10 * US_PER_MINUTE)
  expect((await runJob(app)).outcome).toBe('succeeded')
  expect(await chargeRowsOf(app, poisoned!.tenantId)).toHaveLength(2)
  expect(await chargeRowsOf(app, healthy!.tenantId)).toHaveLength(2)
})

test('a tenant whose freeze fails stays in grace alone: the other overdue tenants are frozen, the run is partial, and it waits out a backoff', async () => {
  const app = await startTestApp({ LOG_LEVEL: 'silent', GRACE_PERIOD_HOURS: '2' })
  apps.push(app)
  await clockTo(app, utcUs(2027, 8, 2, 9, 30))
  const [damaged, sound] = [await payer(app, 'starter', 'first'), await payer(app, 'starter', 'second')].sort((a, b) => (a.tenantId < b.tenantId ? -1 : 1))
  for (const m of [damaged!, sound!]) await adjust(app, m.tenantId, '-1.00', 'debit into grace')
  // The first tenant's notification settings as a damaged database may hold them (rules stored as JSON null):
  // the `balance` notification its freeze raises throws.
  const put = await call(app, 'PUT', '/notifications/settings', damaged!, { json: { rules: { balance: { chat: true } } } })
  expect(put.status).toBe(200)
  await app.deps.db.run(sql`UPDATE notification_settings SET rules = 'null' WHERE tenant_id = ${damaged!.tenantId}`)

  await clockTo(app, utcUs(2027, 8, 2, 11, 31))
  const run = await runJob(app)
  expect(run.outcome).toBe('partial')
  expect(run.detail).toContain(`1 tenants failed: ${damaged!.tenantId} (freeze: `)
  expect((await getBilling(app, sound!)).account_state).toBe('frozen')
  expect((await getBilling(app, damaged!)).account_state).toBe('grace')

  await clockTo(app, utcUs(2027, 8, 2, 11, 31) + 30 * US_PER_SECOND)
  const next = await runJob(app)
  expect(next).toMatchObject({ outcome: 'succeeded' })
  expect(next.detail).toContain('1 tenants waiting out a backoff after failing')
})
