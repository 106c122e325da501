import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { TestApp } from '../support/app'
import { expectProblem } from '../support/problem'
import {
  addPlan,
  adjust,
  cancel,
  clockTo,
  newMember,
  dayStartUs,
  editPlan,
  midNextMonth,
  order,
  orderOk,
  runJob,
  serviceNow,
  startSubscriptionApp,
  subscription,
  tenantOn,
  US_PER_HOUR,
  usOf,
} from '../support/subscription'
import { call } from '../support/access'

let app: TestApp
beforeAll(async () => {
  app = await startSubscriptionApp()
  await midNextMonth(app)
})
afterAll(() => app.close())

const fire = () => runJob(app, 'subscription.fire')

describe('DELETE /subscription/changes/{id}', () => {
  test('a scheduled downgrade is cancelled: 200 cancelled, nothing pending, the version moves, and its day passes without effect', async () => {
    const owner = await tenantOn(app, 'pro', { servers: 1, balance: '50.00' })
    const c = await orderOk(app, owner, { target_plan: 'starter' }, 201)
    const before = (await subscription(app, owner)).body.version
    const t0 = serviceNow(app)
    const r = await cancel(app, owner, c.id)
    expect({ status: r.status, body: r.text }).toMatchObject({ status: 200 })
    expect(r.body).toMatchObject({ id: c.id, status: 'cancelled', target_plan: 'starter', applied_at: null })
    expect(usOf(r.body.cancelled_at!)).toBeGreaterThanOrEqual(t0)
    const s = (await subscription(app, owner)).body
    expect(s).toMatchObject({ pending_change: null, last_change: r.body, plan: { code: 'pro' } })
    expect(s.version).toBeGreaterThan(before)

    // Nothing pending any more: a new unconditional order is accepted.
    const next = await orderOk(app, owner, { target_plan: 'free' }, 201)
    expect(await cancel(app, owner, next.id)).toMatchObject({ status: 200 })

    await clockTo(app, dayStartUs(c.billing_effective_day) + US_PER_HOUR)
    await fire()
    expect((await subscription(app, owner)).body).toMatchObject({ plan: { code: 'pro' }, pending_change: null })
  })

  test('an upgrade awaiting payment can be cancelled', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 2 })
    const c = await orderOk(app, owner, { target_plan: 'pro' }, 201)
    expect(c.status).toBe('awaiting_payment')
    expect((await cancel(app, owner, c.id)).body).toMatchObject({ id: c.id, status: 'cancelled' })
    expect((await subscription(app, owner)).body.pending_change).toBeNull()
  })

  test('an applied change answers 409 change_already_applied', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '10.00' })
    const c = await orderOk(app, owner, { target_plan: 'pro' }, 200)
    await expectProblem((await cancel(app, owner, c.id)).res, 409, 'change_already_applied')
    expect((await subscription(app, owner)).body.plan!.code).toBe('pro')
  })

  test('a scheduled change whose day has come but that has not fired answers 409 change_effective; once fired, change_already_applied', async () => {
    await midNextMonth(app)
    const late = await tenantOn(app, 'pro', { servers: 1, balance: '50.00' })
    const early = await tenantOn(app, 'pro', { servers: 1, balance: '50.00' })
    const c = await orderOk(app, late, { target_plan: 'starter' }, 201)
    const e = await orderOk(app, early, { target_plan: 'starter' }, 201)
    const day = dayStartUs(c.billing_effective_day)

    await clockTo(app, day - 60 * 1_000_000) // one minute before the day: still cancellable
    expect((await cancel(app, early, e.id)).body).toMatchObject({ status: 'cancelled' })

    await clockTo(app, day + 10 * 60 * 1_000_000) // the day has come; subscription.fire has not run
    await expectProblem((await cancel(app, late, c.id)).res, 409, 'change_effective')
    expect((await subscription(app, late)).body.pending_change).toMatchObject({ id: c.id, status: 'scheduled' })

    await fire()
    expect((await subscription(app, late)).body.plan!.code).toBe('starter')
    await expectProblem((await cancel(app, late, c.id)).res, 409, 'change_already_applied')
    expect((await subscription(app, early)).body.plan!.code).toBe('pro')
  })

  test('a scheduled change whose day has come cannot be replaced either: If-Match answers 409 change_effective and the change stays', async () => {
    await midNextMonth(app)
    const owner = await tenantOn(app, 'pro', { servers: 1, balance: '50.00' })
    const c = await orderOk(app, owner, { target_plan: 'starter' }, 201)
    await clockTo(app, dayStartUs(c.billing_effective_day) + 5 * 60 * 1_000_000)
    const { etag } = await subscription(app, owner)
    await expectProblem((await order(app, owner, { target_plan: 'free' }, { 'if-match': etag })).res, 409, 'change_effective')
    expect((await subscription(app, owner)).body.pending_change).toMatchObject({ id: c.id, status: 'scheduled', target_plan: 'starter' })
  })

  test('a change of account state moves the subscription version on, so a cached copy is not answered 304 with the old state', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '1.00' })
    const before = await subscription(app, owner)
    expect(before.body.account_state).toBe('active')
    await adjust(app, owner.tenantId, '-5.00') // below zero: grace
    const res = await call(app, 'GET', '/subscription', owner, { headers: { 'if-none-match': before.etag } })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { account_state: string }).account_state).toBe('grace')
  })

  test('a change already cancelled or refused cannot be cancelled again (409 conflict)', async () => {
    await midNextMonth(app)
    const owner = await tenantOn(app, 'pro', { servers: 1, balance: '50.00' })
    const c = await orderOk(app, owner, { target_plan: 'starter' }, 201)
    await cancel(app, owner, c.id)
    await expectProblem((await cancel(app, owner, c.id)).res, 409, 'conflict')

    const cheap = await addPlan(app, { price: '1.00' })
    const other = await tenantOn(app, 'starter', { servers: 1, balance: '50.00' })
    const r = await orderOk(app, other, { target_plan: cheap }, 201)
    await editPlan(app, cheap, { price: '9.00' })
    await clockTo(app, dayStartUs(r.billing_effective_day) + US_PER_HOUR)
    await fire()
    expect((await subscription(app, other)).body.last_change).toMatchObject({ id: r.id, status: 'refused' })
    await expectProblem((await cancel(app, other, r.id)).res, 409, 'conflict')
  })

  test("another tenant's change answers 404 exactly like an unknown id, and is left alone; a malformed id answers 422", async () => {
    await midNextMonth(app)
    const owner = await tenantOn(app, 'pro', { servers: 1, balance: '50.00' })
    const c = await orderOk(app, owner, { target_plan: 'starter' }, 201)
    const stranger = await tenantOn(app, 'pro', { servers: 1, balance: '50.00' })
    const foreign = await expectProblem((await cancel(app, stranger, c.id)).res, 404, 'not_found')
    const unknown = await expectProblem((await cancel(app, stranger, '0190a0a0-0000-7000-8000-000000000000')).res, 404, 'not_found')
    expect(foreign.detail).toBe(unknown.detail)
    expect((await subscription(app, owner)).body.pending_change).toMatchObject({ id: c.id, status: 'scheduled' })
    await expectProblem((await cancel(app, owner, 'not-a-uuid')).res, 422, 'validation_failed')
  })

  test('a viewer of the tenant may not cancel (403 forbidden)', async () => {
    const owner = await tenantOn(app, 'pro', { servers: 1, balance: '50.00' })
    const c = await orderOk(app, owner, { target_plan: 'starter' }, 201)
    const viewer = await newMember(app, owner.tenantId, 'viewer')
    await expectProblem((await cancel(app, viewer, c.id)).res, 403, 'forbidden')
    expect((await subscription(app, owner)).body.pending_change).toMatchObject({ id: c.id, status: 'scheduled' })
  })
})
