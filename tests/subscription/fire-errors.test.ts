import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { TestApp } from '../support/app'
import {
  addPlan,
  clockTo,
  dayStartUs,
  firstOfNextMonth,
  midNextMonth,
  notificationEvents,
  orderOk,
  startSubscriptionApp,
  subscription,
  tenantOn,
  US_PER_HOUR,
} from '../support/subscription'

/**
 * Issue 13 finding 13: an unexpected failure while firing a scheduled change is not a refusal the
 * customer sees. It is logged with the job run, the tenant and the change, the change stays
 * scheduled (its transaction rolled back), the other due changes still fire, the run is recorded
 * partial, the change is not tried again before its backoff ends (issue 34, "Jobs isolate
 * tenants"), and a later run applies it. The
 * failure here is real data the quote cannot compute with (a price beyond the integers money is
 * kept in), written straight into the database.
 */
let app: TestApp
beforeAll(async () => {
  app = await startSubscriptionApp()
})
afterAll(() => app.close())

async function fire() {
  const res = await app.fetch('/api/v1/_test/jobs/subscription.fire/run', { method: 'POST' })
  expect(res.status).toBe(200)
  return (await res.json()) as { outcome: string; detail: string | null }
}

describe('subscription.fire when a change cannot be computed', () => {
  test('the change stays scheduled (no direction_changed refusal, nothing told to the tenant), the error is logged with the job run, the tenant and the change, the others apply, the run is partial, and a run after its backoff applies it', async () => {
    const t0 = await midNextMonth(app)
    const broken = await addPlan(app, { price: '1.00', label: 'Lite' })
    const hit = await tenantOn(app, 'pro', { servers: 1, balance: '40.00' })
    const other = await tenantOn(app, 'pro', { servers: 1, balance: '40.00' })
    const failing = await orderOk(app, hit, { target_plan: broken }, 201)
    const fine = await orderOk(app, other, { target_plan: 'starter' }, 201)
    const first = firstOfNextMonth(t0)

    await app.deps.db.run(sql`UPDATE plans SET price_micros_per_server_month = ${2 ** 60} WHERE code = ${broken}`)
    await clockTo(app, dayStartUs(first) + 0.5 * US_PER_HOUR)
    const logsBefore = app.logs.length
    const run = await fire()
    expect(run.outcome).toBe('partial')
    expect(run.detail).toContain(`1 tenants failed: ${hit.tenantId} (plan change ${failing.id}: `)
    expect(run.detail).toContain('1 applied, 0 refused')

    expect((await subscription(app, hit)).body.pending_change).toMatchObject({ id: failing.id, status: 'scheduled', refusal_reason: null })
    expect(await notificationEvents(app, hit.tenantId)).toEqual([])
    expect((await subscription(app, other)).body.last_change).toMatchObject({ id: fine.id, status: 'applied' })
    // A run right after does not try it again.
    const next = await fire()
    expect(next).toMatchObject({ outcome: 'succeeded' })
    expect(next.detail).toContain('1 tenants waiting out a backoff after failing')
    const logged = app.logs.slice(logsBefore).filter((l) => l.level === 'error' && l.scope === `plan change ${failing.id}`)
    expect(logged).toHaveLength(1)
    expect(logged[0]).toMatchObject({ job: 'subscription.fire', tenant: hit.tenantId, period: expect.stringMatching(/^manual:/) })
    expect((await subscription(app, hit)).body.pending_change).toMatchObject({ id: failing.id, status: 'scheduled' })

    await app.deps.db.run(sql`UPDATE plans SET price_micros_per_server_month = ${1_000_000} WHERE code = ${broken}`)
    await clockTo(app, dayStartUs(first) + 0.5 * US_PER_HOUR + 61_000_000)
    expect((await fire()).outcome).toBe('succeeded')
    const after = (await subscription(app, hit)).body
    expect(after.plan!.code).toBe(broken)
    expect(after.last_change).toMatchObject({ id: failing.id, status: 'applied' })
  })
})
