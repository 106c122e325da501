import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { setAccountState, type Member } from '../support/access'
import type { TestApp } from '../support/app'
import { expectProblem } from '../support/problem'
import {
  addDays,
  addPlan,
  adjust,
  charges,
  clockTo,
  currentPlan,
  dayOf,
  dayStartUs,
  daysOfMonth,
  editPlan,
  firstOfNextMonth,
  iso,
  micros,
  midNextMonth,
  nextDayAt,
  notificationEvents,
  order,
  orderOk,
  runJob,
  serviceNow,
  setPolicy,
  startSubscriptionApp,
  subscription,
  tenantOn,
  US_PER_HOUR,
  usOf,
} from '../support/subscription'

let app: TestApp
beforeAll(async () => {
  app = await startSubscriptionApp()
})
afterAll(() => app.close())

const fire = () => runJob(app, 'subscription.fire')

async function planOf(owner: Member) {
  return (await subscription(app, owner)).body
}

describe('a downgrade is scheduled and fires on its effective day', () => {
  test('pro → starter: 201 scheduled for the first UTC day of next month; nothing changes before; subscription.fire applies it on the day; billing follows', async () => {
    const t0 = await midNextMonth(app)
    const owner = await tenantOn(app, 'pro', { servers: 1, balance: '40.00' })
    const first = firstOfNextMonth(t0)
    const c = await orderOk(app, owner, { target_plan: 'starter' }, 201)
    expect(c).toMatchObject({
      status: 'scheduled',
      direction: 'downgrade',
      from_plan: 'pro',
      target_plan: 'starter',
      billing_effective_day: first,
      effective_at: iso(dayStartUs(first)),
      applied_at: null,
    })
    expect(micros(c.required_reserve_usd)).toBe(0)
    expect(await planOf(owner)).toMatchObject({ plan: { code: 'pro' }, pending_change: c })
    expect(await currentPlan(app, owner)).toMatchObject({ code: 'pro', capabilities: { strategy: true } })

    await clockTo(app, dayStartUs(first) - US_PER_HOUR) // 23:00 on the last day of the month
    await fire()
    expect((await planOf(owner)).pending_change).toMatchObject({ id: c.id, status: 'scheduled' })

    await clockTo(app, dayStartUs(first) + 0.5 * US_PER_HOUR)
    await fire()
    const after = await planOf(owner)
    expect(after.plan!.code).toBe('starter')
    expect(after.pending_change).toBeNull()
    expect(after.last_change).toMatchObject({ id: c.id, status: 'applied', refusal_reason: null })
    expect(usOf(after.last_change!.applied_at!)).toBeGreaterThanOrEqual(dayStartUs(first))
    expect(await currentPlan(app, owner)).toMatchObject({ code: 'starter', capabilities: { strategy: false } })

    // Firing again changes nothing.
    await fire()
    expect(await planOf(owner)).toEqual(after)

    // The last day of the old month was priced at pro, the first day of the new one at starter.
    await clockTo(app, dayStartUs(first) + 3.5 * US_PER_HOUR)
    await runJob(app, 'billing.charge')
    const rows = await charges(app, owner)
    const lastOld = rows.filter((r) => r.charge_day === addDays(first, -1))
    const firstNew = rows.filter((r) => r.charge_day === first)
    expect(lastOld).toHaveLength(24)
    expect(firstNew).toHaveLength(3)
    for (const r of lastOld)
      expect([r.detail, micros(r.amount_usd)]).toEqual([expect.stringContaining('pro 4.00'), -Math.round(4_000_000 / (daysOfMonth(usOf(r.charge_hour!)) * 24))])
    for (const r of firstNew)
      expect([r.detail, micros(r.amount_usd)]).toEqual([
        expect.stringContaining('starter 2.00'),
        -Math.round(2_000_000 / (daysOfMonth(dayStartUs(first)) * 24)),
      ])
  })

  test('a downgrade is never gated by balance: with a negative balance it is still scheduled', async () => {
    await midNextMonth(app)
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '-30.00' })
    const c = await orderOk(app, owner, { target_plan: 'free' }, 201)
    expect(c).toMatchObject({ status: 'scheduled', direction: 'downgrade', billing_effective_day: firstOfNextMonth(serviceNow(app)) })
    expect(micros(c.required_reserve_usd)).toBe(0)
  })

  test('downgrade_effective=next_day: scheduled for the next UTC day and fired then', async () => {
    const cheap = await addPlan(app, { price: '1.00', label: 'Lite' })
    await setPolicy(app, cheap, { downgrade: 'next_day' })
    const t0 = await nextDayAt(app, 15)
    const owner = await tenantOn(app, 'starter', { servers: 2, balance: '10.00' })
    const tomorrow = addDays(dayOf(t0), 1)
    const c = await orderOk(app, owner, { target_plan: cheap }, 201)
    expect(c).toMatchObject({ status: 'scheduled', billing_effective_day: tomorrow, effective_at: iso(dayStartUs(tomorrow)) })
    await fire()
    expect((await planOf(owner)).plan!.code).toBe('starter')
    await clockTo(app, dayStartUs(tomorrow) + 60 * 1_000_000)
    await fire()
    expect(await planOf(owner)).toMatchObject({ plan: { code: cheap }, pending_change: null, last_change: { id: c.id, status: 'applied' } })
  })
})

describe('firing re-reads the rule', () => {
  test('the catalogue price moved so the downgrade is now an upgrade: refused with direction_changed, and the tenant is told', async () => {
    const cheap = await addPlan(app, { price: '1.00', label: 'Budget' })
    await midNextMonth(app)
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '100.00' })
    const c = await orderOk(app, owner, { target_plan: cheap }, 201)
    expect(c.direction).toBe('downgrade')
    await editPlan(app, cheap, { price: '3.00' }) // the operator raises the price above starter
    const versionBefore = (await planOf(owner)).version

    await clockTo(app, dayStartUs(c.billing_effective_day) + US_PER_HOUR)
    await fire()
    const s = await planOf(owner)
    expect(s.plan!.code).toBe('starter')
    expect(s.pending_change).toBeNull()
    expect(s.last_change).toMatchObject({ id: c.id, status: 'refused', refusal_reason: 'direction_changed', applied_at: null, direction: 'downgrade' })
    expect(s.last_change!.refused_at).not.toBeNull()
    expect(s.version).toBeGreaterThan(versionBefore)
    const told = await notificationEvents(app, owner.tenantId)
    expect(told).toHaveLength(1)
    expect(told[0]!.kind).toBe('subscription.change_refused')
    expect(JSON.parse(told[0]!.payload)).toEqual({ change_id: c.id, target_plan: cheap, reason: 'direction_changed' })

    await fire() // no second refusal, no second notification
    expect(await notificationEvents(app, owner.tenantId)).toHaveLength(1)
  })

  test('a price change that keeps it a downgrade (or makes it lateral) still applies', async () => {
    const cheap = await addPlan(app, { price: '1.00' })
    await midNextMonth(app)
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '100.00' })
    const c = await orderOk(app, owner, { target_plan: cheap }, 201)
    await editPlan(app, cheap, { price: '2.00' })
    await clockTo(app, dayStartUs(c.billing_effective_day) + US_PER_HOUR)
    await fire()
    expect(await planOf(owner)).toMatchObject({ plan: { code: cheap }, last_change: { id: c.id, status: 'applied' } })
    expect(await notificationEvents(app, owner.tenantId)).toHaveLength(0)
  })

  test('the balance no longer covers one day of the paid target at firing: refused with reserve_not_covered, and the tenant is told', async () => {
    await midNextMonth(app)
    const owner = await tenantOn(app, 'pro', { servers: 2, balance: '10.00' })
    const c = await orderOk(app, owner, { target_plan: 'starter' }, 201)
    await adjust(app, owner.tenantId, '-10.05') // balance -0.05 USD: below one day of starter for two servers
    await clockTo(app, dayStartUs(c.billing_effective_day) + US_PER_HOUR)
    await fire()
    const s = await planOf(owner)
    expect(s.plan!.code).toBe('pro')
    expect(s.last_change).toMatchObject({ id: c.id, status: 'refused', refusal_reason: 'reserve_not_covered' })
    const told = await notificationEvents(app, owner.tenantId)
    expect(told.map((n) => [n.kind, JSON.parse(n.payload).reason])).toEqual([['subscription.change_refused', 'reserve_not_covered']])
  })

  test('a change ordered before a freeze still fires: the frozen tenant moves to free on the day', async () => {
    await midNextMonth(app)
    const owner = await tenantOn(app, 'pro', { servers: 1, balance: '-1.00' })
    const c = await orderOk(app, owner, { target_plan: 'free' }, 201)
    await setAccountState(app, owner.tenantId, 'frozen')
    await expectProblem((await order(app, owner, { target_plan: 'starter' })).res, 403, 'account_frozen') // a new order is denied
    await clockTo(app, dayStartUs(c.billing_effective_day) + US_PER_HOUR)
    await fire()
    expect(await planOf(owner)).toMatchObject({
      plan: { code: 'free' },
      pending_change: null,
      last_change: { id: c.id, status: 'applied' },
      account_state: 'frozen',
    })
  })
})
