import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Member } from '../support/access'
import type { TestApp } from '../support/app'
import { expectProblem, UUID } from '../support/problem'
import {
  addPlan,
  balanceOf,
  cancel,
  createTopup,
  currentPlan,
  dailyRate,
  daysOfMonth,
  editPlan,
  micros,
  nextDayAt,
  order,
  orderOk,
  payOnCheckoutPage,
  serviceNow,
  startSubscriptionApp,
  subscription,
  tenantOn,
  topupStatus,
  type Change,
} from '../support/subscription'

const PRO = 4_000_000

let app: TestApp
beforeAll(async () => {
  app = await startSubscriptionApp()
  await nextDayAt(app, 10)
})
afterAll(() => app.close())

/** A starter tenant with `servers` servers and `balance`, and its upgrade to pro left awaiting payment. */
async function awaitingUpgrade(servers: number, balance: string, body: Record<string, unknown> = {}): Promise<{ owner: Member; change: Change }> {
  const owner = await tenantOn(app, 'starter', { servers, balance })
  const change = await orderOk(app, owner, { target_plan: 'pro', ...body }, 201)
  return { owner, change }
}

async function expectStillStarter(owner: Member, changeId: string) {
  const s = (await subscription(app, owner)).body
  expect(s.plan!.code).toBe('starter')
  expect(s.pending_change).toMatchObject({ id: changeId, status: 'awaiting_payment', applied_at: null })
  expect(await currentPlan(app, owner)).toMatchObject({ code: 'starter', capabilities: { strategy: false } })
}

async function expectAppliedBy(owner: Member, changeId: string, topupId: string) {
  const s = (await subscription(app, owner)).body
  expect(s.plan!.code).toBe('pro')
  expect(s.pending_change).toBeNull()
  expect(s.last_change).toMatchObject({ id: changeId, status: 'applied', target_plan: 'pro', topup_id: topupId })
  expect(s.last_change!.applied_at).not.toBeNull()
  expect(await currentPlan(app, owner)).toMatchObject({ code: 'pro', capabilities: { strategy: true } })
}

describe('an upgrade the balance does not cover waits for a verified payment', () => {
  test('the order answers 201 awaiting_payment with the reserve it needs; plan, entitlements and balance stay as they were', async () => {
    const { owner, change } = await awaitingUpgrade(3, '0.10')
    expect(change).toMatchObject({
      status: 'awaiting_payment',
      direction: 'upgrade',
      from_plan: 'starter',
      target_plan: 'pro',
      applied_at: null,
      topup_id: null,
    })
    expect(change.id).toMatch(UUID)
    expect(micros(change.required_reserve_usd)).toBe(3 * dailyRate(PRO, daysOfMonth(serviceNow(app))))
    await expectStillStarter(owner, change.id)
    expect(await balanceOf(app, owner)).toBe(100_000)
  })

  test('paid on the sandbox checkout page with purpose subscription_change: applied inside the verified payment', async () => {
    const { owner, change } = await awaitingUpgrade(2, '0.00')
    const topup = await createTopup(app, owner, '5.00', { kind: 'subscription_change', target_plan: 'pro', change_id: change.id })
    expect(topup.purpose).toEqual({ kind: 'subscription_change', target_plan: 'pro', change_id: change.id })
    await expectStillStarter(owner, change.id) // an invoice alone changes nothing

    // The browser coming back from the provider changes nothing either.
    const back = await app.fetch(`/payments/return?topup_id=${topup.id}&status=finished`)
    expect(back.status).toBe(200)
    await back.text()
    await expectStillStarter(owner, change.id)
    expect(await topupStatus(app, owner, topup.id)).toBe('creating')

    await payOnCheckoutPage(app, topup, '5.00')
    expect(await topupStatus(app, owner, topup.id)).toBe('succeeded')
    expect(await balanceOf(app, owner)).toBe(5_000_000) // the reserve is not spent, only required
    await expectAppliedBy(owner, change.id, topup.id)
  })

  test('purpose kind "subscription" is accepted as the same thing', async () => {
    const { owner, change } = await awaitingUpgrade(1, '-2.00')
    const topup = await createTopup(app, owner, '3.00', { kind: 'subscription', target_plan: 'pro', change_id: change.id })
    expect(topup.purpose.kind).toBe('subscription_change')
    await payOnCheckoutPage(app, topup, '3.00')
    expect(await balanceOf(app, owner)).toBe(1_000_000)
    await expectAppliedBy(owner, change.id, topup.id)
  })

  test("a top-up linked by the order's topup_id pays for it the same way", async () => {
    const owner = await tenantOn(app, 'starter', { servers: 2 })
    const topup = await createTopup(app, owner, '2.00', { kind: 'wallet' })
    const change = await orderOk(app, owner, { target_plan: 'pro', topup_id: topup.id.toUpperCase() }, 201)
    expect(change).toMatchObject({ status: 'awaiting_payment', topup_id: topup.id })
    await expectStillStarter(owner, change.id)
    await payOnCheckoutPage(app, topup, '2.00')
    await expectAppliedBy(owner, change.id, topup.id)
  })

  test('paying too little credits what arrived but leaves the change awaiting payment; a second linked payment completes it', async () => {
    const { owner, change } = await awaitingUpgrade(2, '-5.00')
    const first = await createTopup(app, owner, '1.00', { kind: 'subscription_change', target_plan: 'pro', change_id: change.id })
    await payOnCheckoutPage(app, first, '1.00')
    expect(await topupStatus(app, owner, first.id)).toBe('succeeded')
    expect(await balanceOf(app, owner)).toBe(-4_000_000)
    await expectStillStarter(owner, change.id)

    const second = await createTopup(app, owner, '10.00', { kind: 'subscription_change', target_plan: 'pro', change_id: change.id })
    await payOnCheckoutPage(app, second, '10.00')
    expect(await balanceOf(app, owner)).toBe(6_000_000)
    await expectAppliedBy(owner, change.id, second.id)
  })

  test('an under-payment the provider reports as partially paid moves nothing', async () => {
    const { owner, change } = await awaitingUpgrade(1, '0.00')
    const topup = await createTopup(app, owner, '5.00', { kind: 'subscription_change', target_plan: 'pro', change_id: change.id })
    const path = topup.checkout_url!.replace(/^http:\/\/gpuhq\.test/, '')
    const res = await app.fetch(path, { method: 'POST', json: { outcome: 'partially_paid', amount_usd: '4.00' } })
    expect(res.status).toBe(200)
    await res.text()
    expect(await topupStatus(app, owner, topup.id)).toBe('partially_paid')
    expect(await balanceOf(app, owner)).toBe(0)
    await expectStillStarter(owner, change.id)
  })

  test('a payment for a change that was cancelled meanwhile credits the balance and applies nothing', async () => {
    const { owner, change } = await awaitingUpgrade(1, '0.00')
    const topup = await createTopup(app, owner, '5.00', { kind: 'subscription_change', target_plan: 'pro', change_id: change.id })
    const del = await cancel(app, owner, change.id)
    expect({ status: del.status, body: del.body?.status }).toEqual({ status: 200, body: 'cancelled' })
    await payOnCheckoutPage(app, topup, '5.00')
    expect(await balanceOf(app, owner)).toBe(5_000_000)
    const s = (await subscription(app, owner)).body
    expect(s.plan!.code).toBe('starter')
    expect(s.last_change).toMatchObject({ id: change.id, status: 'cancelled', applied_at: null })
  })

  test("another tenant's payment naming this change id applies nothing", async () => {
    const { owner, change } = await awaitingUpgrade(1, '0.00')
    const stranger = await tenantOn(app, 'starter')
    const topup = await createTopup(app, stranger, '5.00', { kind: 'subscription_change', target_plan: 'pro', change_id: change.id })
    await payOnCheckoutPage(app, topup, '5.00')
    expect(await balanceOf(app, stranger)).toBe(5_000_000)
    await expectStillStarter(owner, change.id)
    expect((await currentPlan(app, stranger))!.code).toBe('starter')
  })

  test("an order naming another tenant's top-up, or one that does not exist, answers 404 and stores nothing", async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1 })
    const stranger = await tenantOn(app, 'starter')
    const theirs = await createTopup(app, stranger, '5.00', { kind: 'wallet' })
    const foreign = await order(app, owner, { target_plan: 'pro', topup_id: theirs.id })
    await expectProblem(foreign.res, 404, 'not_found')
    await expectProblem((await order(app, owner, { target_plan: 'pro', topup_id: '0190a0a0-0000-7000-8000-000000000000' })).res, 404, 'not_found')
    expect((await subscription(app, owner)).body).toMatchObject({ plan: { code: 'starter' }, pending_change: null, last_change: null })
  })

  test('a payment is credited even when the awaited target became contract-priced meanwhile; the change keeps waiting', async () => {
    const target = await addPlan(app, { price: '6.00', label: 'Scale' })
    const owner = await tenantOn(app, 'starter', { servers: 1 })
    const change = await orderOk(app, owner, { target_plan: target }, 201)
    const topup = await createTopup(app, owner, '5.00', { kind: 'subscription_change', target_plan: target, change_id: change.id })
    await editPlan(app, target, { price: 'contract' })
    await payOnCheckoutPage(app, topup, '5.00')
    expect(await topupStatus(app, owner, topup.id)).toBe('succeeded')
    expect(await balanceOf(app, owner)).toBe(5_000_000)
    expect((await subscription(app, owner)).body).toMatchObject({ plan: { code: 'starter' }, pending_change: { id: change.id, status: 'awaiting_payment' } })
  })
})
