import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { setTenantPlan } from '../../src/modules/subscription'
import type { TestApp } from '../support/app'
import {
  addDays,
  addPlan,
  charges,
  clockTo,
  dayOf,
  dayStartUs,
  daysOfMonth,
  editPlan,
  micros,
  nextDayAt,
  orderOk,
  runJob,
  startSubscriptionApp,
  tenantOn,
  US_PER_HOUR,
  usOf,
  type LedgerItem,
} from '../support/subscription'

/**
 * Issue 13 finding 12: an hour is priced by the plan, and the catalogue price, in force during it,
 * however late the charge job books it. A change made during an hour prices that hour (it cannot
 * have been booked yet); every hour that ended before keeps the plan and price it had.
 */
let app: TestApp
beforeAll(async () => {
  app = await startSubscriptionApp()
})
afterAll(() => app.close())

const hourly = (price: number, hourUs: number) => Math.round(price / (daysOfMonth(hourUs) * 24))
const ofDay = (rows: LedgerItem[], day: string) => rows.filter((r) => r.charge_day === day)
const hourOf = (r: LedgerItem, day: string) => (usOf(r.charge_hour!) - dayStartUs(day)) / US_PER_HOUR

describe('charges follow the plan history, not the plan of the day they are booked', () => {
  test('an upgrade at 12:30, with no hour of the day booked yet: the charge run prices 01:00–11:00 at starter and 12:00 on at pro', async () => {
    const day = dayOf(await nextDayAt(app, 1))
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '50.00' })
    await clockTo(app, dayStartUs(day) + 12.5 * US_PER_HOUR)
    await orderOk(app, owner, { target_plan: 'pro' }, 200)
    await clockTo(app, dayStartUs(addDays(day, 1)) + 1.5 * US_PER_HOUR)
    await runJob(app, 'billing.charge')

    const rows = ofDay(await charges(app, owner), day)
    expect(rows.map((r) => hourOf(r, day))).toEqual(Array.from({ length: 23 }, (_, i) => i + 1))
    for (const r of rows) {
      const pro = hourOf(r, day) >= 12
      expect([hourOf(r, day), r.detail.includes(pro ? 'pro 4.00' : 'starter 2.00'), micros(r.amount_usd)]).toEqual([
        hourOf(r, day),
        true,
        -hourly(pro ? 4_000_000 : 2_000_000, usOf(r.charge_hour!)),
      ])
    }
  })

  test('a catalogue price edit at 12:30 prices 12:00 on at the new price; the hours before keep the old one, though booked after the edit', async () => {
    const plan = await addPlan(app, { price: '1.00', label: 'Edited later' })
    const day = dayOf(await nextDayAt(app, 1))
    const owner = await tenantOn(app, plan, { servers: 2, balance: '50.00' })
    await clockTo(app, dayStartUs(day) + 12.5 * US_PER_HOUR)
    await editPlan(app, plan, { price: '3.00' })
    await clockTo(app, dayStartUs(addDays(day, 1)) + 1.5 * US_PER_HOUR)
    await runJob(app, 'billing.charge')

    const rows = ofDay(await charges(app, owner), day)
    expect(rows).toHaveLength(23)
    for (const r of rows) {
      const later = hourOf(r, day) >= 12
      expect([hourOf(r, day), r.detail.includes(`${plan} ${later ? '3.00' : '1.00'}`), micros(r.amount_usd)]).toEqual([
        hourOf(r, day),
        true,
        -hourly((later ? 3_000_000 : 1_000_000) * 2, usOf(r.charge_hour!)),
      ])
    }
    // A second edit later changes nothing already in force before it.
    await clockTo(app, dayStartUs(addDays(day, 1)) + 6.5 * US_PER_HOUR)
    await editPlan(app, plan, { price: '5.00' })
    await clockTo(app, dayStartUs(addDays(day, 1)) + 9.5 * US_PER_HOUR)
    await runJob(app, 'billing.charge')
    const next = ofDay(await charges(app, owner), addDays(day, 1))
    expect(next.map((r) => [hourOf(r, addDays(day, 1)), r.detail.includes(`${plan} ${hourOf(r, addDays(day, 1)) >= 6 ? '5.00' : '3.00'}`)])).toEqual(
      Array.from({ length: 9 }, (_, h) => [h, true]), // 00:00 … 08:00 are due at 09:30
    )
  })

  test('the operator\'s set-plan at 12:30 (and then "none") bills from its own hour on; earlier hours keep the plan they had', async () => {
    const day = dayOf(await nextDayAt(app, 1))
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '50.00' })
    await clockTo(app, dayStartUs(day) + 12.5 * US_PER_HOUR)
    await setTenantPlan({ deps: app.deps, input: { tenantId: owner.tenantId, plan: 'pro' } })
    await clockTo(app, dayStartUs(day) + 18.25 * US_PER_HOUR)
    await setTenantPlan({ deps: app.deps, input: { tenantId: owner.tenantId, plan: null } })
    await clockTo(app, dayStartUs(addDays(day, 1)) + 1.5 * US_PER_HOUR)
    await runJob(app, 'billing.charge')

    const rows = ofDay(await charges(app, owner), day)
    expect(rows.map((r) => [hourOf(r, day), r.detail.includes('starter') ? 'starter' : 'pro'])).toEqual(
      Array.from({ length: 17 }, (_, i) => [i + 1, i + 1 >= 12 ? 'pro' : 'starter']),
    )
  })
})
