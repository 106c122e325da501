import { afterEach, describe, expect, test } from 'bun:test'
import { auditRows, call, newTenant, setAccountState, type Member } from '../support/access'
import { advanceBy } from '../support/billing'
import { expectProblem } from '../support/problem'
import {
  balanceMicros,
  createTopup,
  debit,
  getTopup,
  ipn,
  npTopup,
  runReconcile,
  sandboxPay,
  startPaymentsApp,
  topupEntries,
  type PaymentsApp,
} from '../support/payments'

/**
 * docs/payments.md "Account state", "States" and "billing.reconcile", on the test clock: a
 * succeeded top-up that brings a frozen account above zero unfreezes it in the same transaction
 * (and only such a top-up does); billing.reconcile re-reads open top-ups from the provider and
 * settles them, and expires an unpaid one once its invoice's 24 h are over. Each test has its own
 * app: the clock only moves forward.
 */

const apps: PaymentsApp[] = []
async function freshApp(providers = 'sandbox,nowpayments') {
  const app = await startPaymentsApp(providers)
  apps.push(app)
  return app
}
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop()
})

async function accountState(app: PaymentsApp, m: Member): Promise<string> {
  const res = await call(app, 'GET', '/billing', m)
  expect(res.status).toBe(200)
  return ((await res.json()) as { account_state: string }).account_state
}
const mintInit = (app: PaymentsApp, m: Member) => call(app, 'POST', '/tokens/init', m, { json: {} })

describe('a top-up is the way out of a freeze', () => {
  test('partial payment and a credit that leaves the balance below zero keep the account frozen; a top-up above zero unfreezes it and /tokens/init works again', async () => {
    const app = await freshApp('sandbox')
    const m = await newTenant(app, 'frozen')
    await debit(app, m.tenantId, 5_000_000)
    await setAccountState(app, m.tenantId, 'frozen')
    await expectProblem(await mintInit(app, m), 403, 'account_frozen')

    const partial = await createTopup(app, m, '12.50', 'card')
    await sandboxPay(app, partial, 'partially_paid', '12.00')
    expect((await getTopup(app, m, partial.id)).status).toBe('partially_paid')
    expect(await accountState(app, m)).toBe('frozen')
    await expectProblem(await mintInit(app, m), 403, 'account_frozen')

    const small = await createTopup(app, m, '3.00', 'card')
    await sandboxPay(app, small, 'finished')
    expect(await balanceMicros(app, m)).toBe(-2_000_000)
    expect(await accountState(app, m)).toBe('frozen')
    await expectProblem(await mintInit(app, m), 403, 'account_frozen')

    const enough = await createTopup(app, m, '10.00', 'card')
    await sandboxPay(app, enough, 'finished')
    expect(await balanceMicros(app, m)).toBe(8_000_000)
    expect(await accountState(app, m)).toBe('active')
    const res = await mintInit(app, m)
    expect(res.status).toBe(201)
    await res.text()
    // The unfreeze is the system's doing, visible in the audit trail exactly once.
    const unfrozen = (await auditRows(app, m)).filter((r) => r.operation === 'account.unfrozen')
    expect(unfrozen.map((r) => r.actor.kind)).toEqual(['system'])
  })

  test('a succeeded top-up that brings a grace account back to zero or above makes it active', async () => {
    const app = await freshApp('sandbox')
    const m = await newTenant(app, 'grace')
    await debit(app, m.tenantId, 2_000_000)
    expect(await accountState(app, m)).toBe('grace')
    const t = await createTopup(app, m, '2.00', 'card')
    await sandboxPay(app, t, 'finished')
    expect(await balanceMicros(app, m)).toBe(0)
    expect(await accountState(app, m)).toBe('active')
  })
})

describe('billing.reconcile', () => {
  test('settles an open top-up whose payment the API now reports finished, though its notification never came; a second run changes nothing', async () => {
    const app = await freshApp('nowpayments')
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'waiting' })
    await ipn(app, p.payment_id)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'creating', provider_status: 'waiting' })

    app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25, paymentId: p.payment_id })
    const reads = app.np.requests.filter((r) => r.path === `/v1/payment/${p.payment_id}`).length
    await runReconcile(app)
    expect(app.np.requests.filter((r) => r.path === `/v1/payment/${p.payment_id}`).length).toBe(reads + 1)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '25.00' })
    await runReconcile(app)
    expect(await topupEntries(app, owner.tenantId)).toHaveLength(1)
    expect(await balanceMicros(app, owner)).toBe(25_000_000)
  })

  test('moves an open top-up to partially_paid when that is what the API says, without touching the balance', async () => {
    const app = await freshApp('nowpayments')
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'waiting' })
    await ipn(app, p.payment_id)
    app.np.pay(topup.invoice_id!, { status: 'partially_paid', paidUsd: 7, paymentId: p.payment_id })
    await runReconcile(app)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'partially_paid', credited_usd: '0.00' })
    expect(await balanceMicros(app, owner)).toBe(0)
  })

  test('leaves a top-up untouched while the API cannot be reached, and settles it on a later run', async () => {
    const app = await freshApp('nowpayments')
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'waiting' })
    await ipn(app, p.payment_id)
    app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25, paymentId: p.payment_id })
    app.np.fail('500', 'payment')
    const run = await runReconcile(app)
    expect(run.detail).toContain('1 unreadable')
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'creating', credited_usd: '0.00' })
    app.np.fail('none')
    await runReconcile(app)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '25.00' })
  })

  test('expires an unpaid top-up once its 24 h are over (test clock), not before, and not one whose payment is still moving', async () => {
    const app = await freshApp('sandbox,nowpayments')
    const m = await newTenant(app, 'expiry')
    const old = await createTopup(app, m, '12.50', 'card')
    const { topup: moving } = await npTopup(app, '25.00', m)
    const p = app.np.pay(moving.invoice_id!, { status: 'confirming', paidUsd: 25 })
    await ipn(app, p.payment_id)
    await advanceBy(app, 23 * 3600)
    const young = await createTopup(app, m, '12.50', 'card')
    await runReconcile(app)
    expect((await getTopup(app, m, old.id)).status).toBe('creating')

    await advanceBy(app, 3600 + 5)
    await runReconcile(app)
    const expired = await getTopup(app, m, old.id)
    expect(expired).toMatchObject({ status: 'expired', credited_usd: '0.00' })
    expect(expired.checkout_url).toBeUndefined()
    expect((await getTopup(app, m, young.id)).status).toBe('creating')
    expect(await getTopup(app, m, moving.id)).toMatchObject({ status: 'creating', provider_status: 'confirming' })
    expect(await balanceMicros(app, m)).toBe(0)
  })

  test('money that arrives for a top-up expired by the clock is still credited: a finished payment is never dropped', async () => {
    const app = await freshApp('nowpayments')
    const { owner, topup } = await npTopup(app, '25.00')
    await advanceBy(app, 24 * 3600 + 5)
    await runReconcile(app)
    expect((await getTopup(app, owner, topup.id)).status).toBe('expired')
    const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25 })
    await ipn(app, p.payment_id)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '25.00' })
    expect(await balanceMicros(app, owner)).toBe(25_000_000)
  })
})
