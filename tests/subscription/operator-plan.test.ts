import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { setTenantPlan } from '../../src/modules/subscription'
import { call } from '../support/access'
import type { TestApp } from '../support/app'
import {
  addDays,
  charges,
  clockTo,
  dayOf,
  dayStartUs,
  nextDayAt,
  orderOk,
  runJob,
  serviceNow,
  startSubscriptionApp,
  type Subscription,
  subscription,
  tenantOn,
  US_PER_HOUR,
} from '../support/subscription'

/** The operator's set-plan (what `scripts/admin set-plan` runs), after the tenant changed plans itself. */
let app: TestApp
beforeAll(async () => {
  app = await startSubscriptionApp()
  await nextDayAt(app, 10)
})
afterAll(() => app.close())

const setPlanAsOperator = (tenantId: string, plan: string | null) => setTenantPlan({ deps: app.deps, input: { tenantId, plan } })

describe('an operator plan change after a subscription change', () => {
  test("billing follows the operator's plan from that day, not the plan period the upgrade left behind", async () => {
    const day = dayOf(serviceNow(app))
    const moved = await tenantOn(app, 'starter', { servers: 1, balance: '50.00' })
    const dropped = await tenantOn(app, 'starter', { servers: 1, balance: '50.00' })
    await orderOk(app, moved, { target_plan: 'pro' }, 200)
    await orderOk(app, dropped, { target_plan: 'pro' }, 200)
    await clockTo(app, dayStartUs(addDays(day, 1)) + 12 * US_PER_HOUR)
    await setPlanAsOperator(moved.tenantId, 'starter')
    await setPlanAsOperator(dropped.tenantId, null)
    await clockTo(app, dayStartUs(addDays(day, 3)) + 2 * US_PER_HOUR)
    await runJob(app, 'billing.charge')

    const m = await charges(app, moved)
    expect(m.filter((r) => r.charge_day === day).every((r) => r.detail.includes('pro 4.00'))).toBe(true)
    const after = m.filter((r) => r.charge_day === addDays(day, 2))
    expect(after).toHaveLength(24)
    expect(after.every((r) => r.detail.includes('starter 2.00'))).toBe(true)

    const d = await charges(app, dropped)
    expect(d.filter((r) => r.charge_day === addDays(day, 2))).toEqual([]) // no plan, nothing billed
  })

  test('the subscription version moves, so a cached GET /subscription is not answered 304 with the old plan', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '5.00' })
    const { etag } = await subscription(app, owner)
    await setPlanAsOperator(owner.tenantId, 'pro')
    const res = await call(app, 'GET', '/subscription', owner, { headers: { 'if-none-match': etag } })
    expect(res.status).toBe(200)
    expect(((await res.json()) as Subscription).plan!.code).toBe('pro')
  })
})
