import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { TestApp } from '../support/app'
import {
  addDays,
  addPlan,
  balanceOf,
  charges,
  clockTo,
  currentPlan,
  dailyRate,
  dayOf,
  dayStartUs,
  daysOfMonth,
  micros,
  nextDayAt,
  orderOk,
  runJob,
  serviceNow,
  setPolicy,
  startSubscriptionApp,
  subscription,
  tenantOn,
  US_PER_HOUR,
  usOf,
  type LedgerItem,
} from '../support/subscription'

const PRO = 4_000_000
const STARTER = 2_000_000

let app: TestApp
beforeAll(async () => {
  app = await startSubscriptionApp()
  await nextDayAt(app, 10)
})
afterAll(() => app.close())

/** One hour of `price` for one server, as the charge rule books it (price ÷ days of that month ÷ 24). */
const hourly = (price: number, hourUs: number) => Math.round(price / (daysOfMonth(hourUs) * 24))
const chargesOfDay = (rows: LedgerItem[], day: string) => rows.filter((r) => r.charge_day === day)

describe('an upgrade the balance covers is applied at once', () => {
  test('starter → pro answers 200 applied, read back as GET /subscription shows it, and the version moves', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 2, balance: '20.00' })
    const before = await subscription(app, owner)
    expect(before.body).toMatchObject({ pending_change: null, last_change: null })
    expect(before.etag).toBe(`"${before.body.version}"`)
    const t0 = serviceNow(app)
    const c = await orderOk(app, owner, { target_plan: 'pro' }, 200)
    expect(c).toMatchObject({
      status: 'applied',
      direction: 'upgrade',
      from_plan: 'starter',
      target_plan: 'pro',
      billing_effective_day: dayOf(t0),
      refusal_reason: null,
      topup_id: null,
      cancelled_at: null,
      refused_at: null,
    })
    expect(micros(c.required_reserve_usd)).toBe(2 * dailyRate(PRO, daysOfMonth(t0)))
    expect(usOf(c.applied_at!)).toBeGreaterThanOrEqual(t0)
    expect(usOf(c.requested_at)).toBeGreaterThanOrEqual(t0)
    const after = await subscription(app, owner)
    expect(after.body.plan!.code).toBe('pro')
    expect(after.body.pending_change).toBeNull()
    expect(after.body.last_change).toEqual(c)
    expect(after.body.version).toBeGreaterThan(before.body.version)
    expect(after.etag).toBe(`"${after.body.version}"`)
  })

  test('entitlements are immediate: GET /plans/current shows pro and the strategy capability right after the order', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '5.00' })
    expect(await currentPlan(app, owner)).toMatchObject({ code: 'starter', capabilities: { strategy: false, ai_access: false } })
    await orderOk(app, owner, { target_plan: 'pro' }, 200)
    expect(await currentPlan(app, owner)).toMatchObject({ code: 'pro', capabilities: { strategy: true, ai_access: true, 'fleet.servers.max': null } })
  })

  test('the upgrade does not spend the reserve: the balance is unchanged by the order itself', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 3, balance: '7.00' })
    await orderOk(app, owner, { target_plan: 'pro' }, 200)
    expect(await balanceOf(app, owner)).toBe(7_000_000)
  })
})

describe('billing follows the plan period of each UTC day', () => {
  test('same_day (default): hours of the change day booked after the change are priced at pro, earlier bookings stay starter', async () => {
    const d0 = await nextDayAt(app, 10)
    const day = dayOf(d0)
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '50.00' })
    await clockTo(app, dayStartUs(day) + 12.5 * US_PER_HOUR)
    await runJob(app, 'billing.charge') // books 10:00 and 11:00 of the change day at starter
    const booked = await charges(app, owner)
    expect(booked.map((r) => usOf(r.charge_hour!))).toEqual([dayStartUs(day) + 10 * US_PER_HOUR, dayStartUs(day) + 11 * US_PER_HOUR])

    const c = await orderOk(app, owner, { target_plan: 'pro' }, 200)
    expect(c.billing_effective_day).toBe(day)
    await clockTo(app, dayStartUs(addDays(day, 1)) + 1.5 * US_PER_HOUR)
    await runJob(app, 'billing.charge')

    const rows = chargesOfDay(await charges(app, owner), day)
    expect(rows).toHaveLength(14) // 10:00 … 23:00
    for (const r of rows) {
      const h = usOf(r.charge_hour!)
      const pro = h >= dayStartUs(day) + 12 * US_PER_HOUR
      expect({ hour: r.charge_hour, plan: r.detail.includes(pro ? 'pro 4.00' : 'starter 2.00'), amount: micros(r.amount_usd) }).toEqual({
        hour: r.charge_hour,
        plan: true,
        amount: -hourly(pro ? PRO : STARTER, h),
      })
      expect(r.calculation_id).not.toBeNull()
    }
    const next = chargesOfDay(await charges(app, owner), addDays(day, 1))
    expect(next.map((r) => [r.detail.includes('pro 4.00'), micros(r.amount_usd)])).toEqual([[true, -hourly(PRO, dayStartUs(addDays(day, 1)))]])
  })

  test('upgrade_effective=next_day: entitlements now, the change day still at starter, the new price from the next UTC day', async () => {
    const plus = await addPlan(app, { price: '4.00', label: 'Pro next day', features: 'strategy' })
    await setPolicy(app, plus, { upgrade: 'next_day' })
    const d0 = await nextDayAt(app, 10)
    const day = dayOf(d0)
    const owner = await tenantOn(app, 'starter', { servers: 2, balance: '50.00' })
    const c = await orderOk(app, owner, { target_plan: plus }, 200)
    expect(c).toMatchObject({ status: 'applied', billing_effective_day: addDays(day, 1) })
    expect(await currentPlan(app, owner)).toMatchObject({ code: plus, capabilities: { strategy: true } })

    await clockTo(app, dayStartUs(addDays(day, 2)) + 1.5 * US_PER_HOUR)
    await runJob(app, 'billing.charge')
    const all = await charges(app, owner)
    const changeDay = chargesOfDay(all, day)
    expect(changeDay).toHaveLength(14)
    for (const r of changeDay)
      expect([r.detail, micros(r.amount_usd)]).toEqual([
        expect.stringContaining('2 servers × starter 2.00'),
        -Math.round((STARTER * 2) / (daysOfMonth(usOf(r.charge_hour!)) * 24)),
      ])
    const nextDay = chargesOfDay(all, addDays(day, 1))
    expect(nextDay).toHaveLength(24)
    for (const r of nextDay)
      expect([r.detail, micros(r.amount_usd)]).toEqual([
        expect.stringContaining(`2 servers × ${plus} 4.00`),
        -Math.round((PRO * 2) / (daysOfMonth(usOf(r.charge_hour!)) * 24)),
      ])
  })
})

describe('lateral changes', () => {
  test('a plan at the same price is applied at once (200), needs no balance, and bills from today', async () => {
    const twin = await addPlan(app, { price: '2.00', label: 'Starter EU', serversMax: '10' })
    const owner = await tenantOn(app, 'starter', { servers: 2, balance: '-3.00' })
    const c = await orderOk(app, owner, { target_plan: twin }, 200)
    expect(c).toMatchObject({ status: 'applied', direction: 'lateral', from_plan: 'starter', target_plan: twin, billing_effective_day: dayOf(serviceNow(app)) })
    expect(micros(c.required_reserve_usd)).toBe(0)
    expect(c.applied_at).not.toBeNull()
    expect((await currentPlan(app, owner))!.code).toBe(twin)
  })
})
