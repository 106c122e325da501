import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call } from '../support/access'
import type { TestApp } from '../support/app'
import { expectProblem } from '../support/problem'
import {
  addDays,
  addPlan,
  adjust,
  dailyRate,
  dayOf,
  daysOfMonth,
  editPlan,
  firstOfNextMonth,
  getQuote,
  micros,
  nextDayAt,
  serviceNow,
  setPolicy,
  startSubscriptionApp,
  tenantOn,
  usOf,
} from '../support/subscription'

const PRO = 4_000_000
const STARTER = 2_000_000
const QUOTE_FIELDS = [
  'balance_usd',
  'billing_effective_day',
  'covered',
  'current_plan',
  'direction',
  'managed_servers',
  'monthly_price_per_server_usd',
  'quoted_at',
  'required_reserve_usd',
  'server_limit',
  'target_plan',
  'unit_daily_rate_usd',
].sort()

let app: TestApp
let today: string
let days: number
beforeAll(async () => {
  app = await startSubscriptionApp()
  const now = await nextDayAt(app, 10) // 10:00 UTC: "today" cannot roll over during this file
  today = dayOf(now)
  days = daysOfMonth(now)
})
afterAll(() => app.close())

describe('GET /subscription/quote: what a plan change would mean', () => {
  test('an upgrade quote carries exactly the documented fields: one day of the target at the current fleet against the balance', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 3, balance: '10.00' })
    const before = serviceNow(app)
    const r = await getQuote(app, owner, 'pro')
    expect({ status: r.status, body: r.text }).toMatchObject({ status: 200 })
    const q = r.body
    expect(Object.keys(q).sort()).toEqual(QUOTE_FIELDS)
    expect(q).toMatchObject({
      target_plan: 'pro',
      current_plan: 'starter',
      direction: 'upgrade',
      managed_servers: 3,
      covered: true,
      server_limit: null,
      billing_effective_day: today,
    })
    expect(q.monthly_price_per_server_usd).toBe('4.00')
    expect(micros(q.unit_daily_rate_usd)).toBe(dailyRate(PRO, days)) // 4.00 ÷ days of this month
    expect(micros(q.required_reserve_usd)).toBe(3 * dailyRate(PRO, days))
    expect(micros(q.balance_usd)).toBe(10_000_000)
    const quotedAt = usOf(q.quoted_at)
    expect(quotedAt).toBeGreaterThanOrEqual(before)
    expect(quotedAt).toBeLessThanOrEqual(serviceNow(app))
  })

  test('money fields are decimal strings, never JSON numbers', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '3.50' })
    const raw = (await getQuote(app, owner, 'pro')).text
    for (const f of ['monthly_price_per_server_usd', 'unit_daily_rate_usd', 'required_reserve_usd', 'balance_usd'])
      expect(raw).toMatch(new RegExp(`"${f}":"-?\\d+(\\.\\d{1,6})?"`))
  })

  test('an upgrade is covered exactly when the balance reaches the reserve, and not one micro-dollar below', async () => {
    const reserve = 2 * dailyRate(PRO, days)
    const exact = await tenantOn(app, 'starter', { servers: 2, balance: (reserve / 1e6).toFixed(6) })
    expect((await getQuote(app, exact, 'pro')).body).toMatchObject({ covered: true })
    const short = await tenantOn(app, 'starter', { servers: 2, balance: ((reserve - 1) / 1e6).toFixed(6) })
    const q = (await getQuote(app, short, 'pro')).body
    expect(q.covered).toBe(false)
    expect(micros(q.required_reserve_usd)).toBe(reserve)
    const broke = await tenantOn(app, 'starter', { servers: 2 })
    expect((await getQuote(app, broke, 'pro')).body).toMatchObject({ covered: false, balance_usd: '0.00' })
  })

  test('with no managed servers an upgrade reserves nothing, so it is covered at zero but not below zero', async () => {
    const zero = await tenantOn(app, 'starter')
    const q = (await getQuote(app, zero, 'pro')).body
    expect({ managed: q.managed_servers, reserve: micros(q.required_reserve_usd), covered: q.covered }).toEqual({ managed: 0, reserve: 0, covered: true })
    const negative = await tenantOn(app, 'starter', { balance: '-0.01' })
    expect((await getQuote(app, negative, 'pro')).body).toMatchObject({ covered: false })
  })

  test('a downgrade is never gated: reserve 0, covered even with a negative balance, billing from the first UTC day of next month', async () => {
    const owner = await tenantOn(app, 'pro', { servers: 4, balance: '-25.00' })
    const q = (await getQuote(app, owner, 'starter')).body
    expect(q).toMatchObject({ target_plan: 'starter', current_plan: 'pro', direction: 'downgrade', managed_servers: 4, covered: true, server_limit: 10 })
    expect(micros(q.required_reserve_usd)).toBe(0)
    expect(micros(q.balance_usd)).toBe(-25_000_000)
    expect(micros(q.unit_daily_rate_usd)).toBe(dailyRate(STARTER, days))
    expect(q.billing_effective_day).toBe(firstOfNextMonth(serviceNow(app)))
  })

  test('a downgrade to free shows a zero rate and the one-server limit', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1 })
    const q = (await getQuote(app, owner, 'free')).body
    expect(q).toMatchObject({ direction: 'downgrade', monthly_price_per_server_usd: '0.00', server_limit: 1, covered: true })
    expect(micros(q.unit_daily_rate_usd)).toBe(0)
  })

  test("the target plan's policy moves the billing day: upgrade next_day → tomorrow, downgrade next_day → tomorrow", async () => {
    const up = await addPlan(app, { price: '5.00' })
    const down = await addPlan(app, { price: '1.00' })
    await setPolicy(app, up, { upgrade: 'next_day' })
    await setPolicy(app, down, { downgrade: 'next_day' })
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '5.00' })
    expect((await getQuote(app, owner, up)).body).toMatchObject({ direction: 'upgrade', billing_effective_day: addDays(today, 1) })
    expect((await getQuote(app, owner, down)).body).toMatchObject({ direction: 'downgrade', billing_effective_day: addDays(today, 1) })
  })

  test('equal effective prices are lateral: not gated, billed from today', async () => {
    const twin = await addPlan(app, { price: '2.00', label: 'Starter Plus Deluxe' })
    const owner = await tenantOn(app, 'starter', { servers: 2, balance: '-1.00' })
    const q = (await getQuote(app, owner, twin)).body
    expect(q).toMatchObject({ direction: 'lateral', covered: true, billing_effective_day: today })
    expect(micros(q.required_reserve_usd)).toBe(0)
  })
})

describe('direction comes from effective prices only, never from names', () => {
  test('a plan called "Premium" that costs less than starter is a downgrade; one called "Basic" that costs more is an upgrade', async () => {
    const premium = await addPlan(app, { price: '1.00', label: 'Premium Ultra' })
    const basic = await addPlan(app, { price: '9.00', label: 'Basic' })
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '1.00' })
    expect((await getQuote(app, owner, premium)).body.direction).toBe('downgrade')
    expect((await getQuote(app, owner, basic)).body.direction).toBe('upgrade')
  })

  test("renaming a plan's label does not change the direction; changing its price does", async () => {
    const p = await addPlan(app, { price: '3.00', label: 'Gold' })
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '1.00' })
    expect((await getQuote(app, owner, p)).body.direction).toBe('upgrade')
    await editPlan(app, p, { label: 'Free' })
    expect((await getQuote(app, owner, p)).body.direction).toBe('upgrade')
    await editPlan(app, p, { label: 'Enterprise Max' })
    expect((await getQuote(app, owner, p)).body.direction).toBe('upgrade')
    await editPlan(app, p, { price: '0.50' })
    expect((await getQuote(app, owner, p)).body.direction).toBe('downgrade')
    await editPlan(app, p, { price: '2.00' })
    expect((await getQuote(app, owner, p)).body.direction).toBe('lateral')
  })

  test('the quote follows a balance change at once (nothing cached)', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1 })
    expect((await getQuote(app, owner, 'pro')).body.covered).toBe(false)
    await adjust(app, owner.tenantId, '1.00')
    expect((await getQuote(app, owner, 'pro')).body).toMatchObject({ covered: true, balance_usd: '1.00' })
  })
})

describe('quote refusals', () => {
  test('a contract-priced target (enterprise) answers 403 feature_not_entitled', async () => {
    const owner = await tenantOn(app, 'starter', { balance: '1000.00' })
    await expectProblem((await getQuote(app, owner, 'enterprise')).res, 403, 'feature_not_entitled')
  })

  test('a plan code that is not in the catalogue answers 404', async () => {
    const owner = await tenantOn(app, 'starter')
    await expectProblem((await getQuote(app, owner, 'platinum')).res, 404, 'not_found')
  })

  test('a tenant without a plan assignment answers 409 plan_required', async () => {
    const owner = await tenantOn(app, null)
    await expectProblem((await getQuote(app, owner, 'pro')).res, 409, 'plan_required')
  })

  test('a malformed plan code, or none at all, answers 422', async () => {
    const owner = await tenantOn(app, 'starter')
    for (const bad of ['Pro', 'p', '1pro', 'pro plan', 'x'.repeat(65), 'pro!'])
      await expectProblem((await getQuote(app, owner, bad)).res, 422, 'validation_failed')
    await expectProblem(await call(app, 'GET', '/subscription/quote', owner), 422, 'validation_failed')
  })

  test('without a session the quote answers 401', async () => {
    await expectProblem((await getQuote(app, null, 'pro')).res, 401, 'unauthorized')
  })
})
