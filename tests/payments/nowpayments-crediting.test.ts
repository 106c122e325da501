import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { sendIpn } from '../support/nowpayments'
import { expectProblem } from '../support/problem'
import { balanceMicros, getTopup, ipn, notificationsOf, npTopup, snapshot, startPaymentsApp, topupEntries, type PaymentsApp } from '../support/payments'

/**
 * docs/payments.md "States", "Exactly-once crediting" and "NOWPayments: what is trusted, and why":
 * a verified NOWPayments notification is only a reason to read the payment back from the API; the
 * read-back decides. Exactly one ledger credit per provider payment whatever the number, order or
 * concurrency of notifications (a unique index, not a check); a terminal top-up never moves back;
 * disagreements go to review; the API being down answers 503 so that NOWPayments retries.
 */

let app: PaymentsApp
beforeAll(async () => {
  app = await startPaymentsApp('nowpayments')
})
afterAll(() => app.stop())
afterEach(() => app.np.fail('none'))

describe('the API, not the notification, decides', () => {
  test('a notification claiming finished while the API says waiting credits nothing; the next one, once the API says finished, credits', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'waiting' })
    const r = await ipn(app, p.payment_id, { payment_status: 'finished', actually_paid: 25, actually_paid_at_fiat: 25 })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ received: true, topup_status: 'creating' })
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'creating', provider_status: 'waiting', credited_usd: '0.00' })
    expect(await topupEntries(app, owner.tenantId)).toEqual([])

    app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25, paymentId: p.payment_id })
    expect((await ipn(app, p.payment_id)).body).toEqual({ received: true, topup_status: 'succeeded' })
    expect(await balanceMicros(app, owner)).toBe(25_000_000)
    expect((await notificationsOf(app, topup.id)).map((n) => [n.reported_status, n.outcome])).toEqual([
      ['finished', 'creating'],
      ['finished', 'succeeded'],
    ])
  })

  test('confirming and sending are progress: the provider status shows them, the top-up stays open and nothing is credited', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'confirming', paidUsd: 25 })
    await ipn(app, p.payment_id)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'creating', provider_status: 'confirming' })
    app.np.setPayment(p.payment_id, { payment_status: 'sending' })
    await ipn(app, p.payment_id)
    const t = await getTopup(app, owner, topup.id)
    expect(t).toMatchObject({ status: 'creating', provider_status: 'sending', credited_usd: '0.00' })
    expect(t.checkout_url).toBe(app.np.invoices.get(topup.invoice_id!)!.invoice_url)
  })

  test('partially_paid at the API → partially_paid, balance unchanged; paying the rest as a finished payment credits what was confirmed', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'partially_paid', paidUsd: 10 })
    expect((await ipn(app, p.payment_id)).body).toEqual({ received: true, topup_status: 'partially_paid' })
    expect(await balanceMicros(app, owner)).toBe(0)
    app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 24.5, paymentId: p.payment_id })
    await ipn(app, p.payment_id)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '24.50' })
    expect(await balanceMicros(app, owner)).toBe(24_500_000)
  })
})

describe('exactly one credit per provider payment', () => {
  test('the same paid IPN delivered 5 times, concurrently and out of order (finished before confirming), credits exactly once', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25 })
    const claims = ['finished', 'finished', 'confirming', 'finished', 'confirming']
    const results = await Promise.all(claims.map((s) => ipn(app, p.payment_id, { payment_status: s })))
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200])
    expect(results.every((r) => r.body.topup_status === 'succeeded')).toBe(true)
    expect(await topupEntries(app, owner.tenantId)).toEqual([
      { amount_micros: 25_000_000, payment_ref: `nowpayments:${p.payment_id}`, balance_after_micros: 25_000_000 },
    ])
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '25.00' })
    expect(await notificationsOf(app, topup.id)).toHaveLength(5)
  })

  test('a late confirming (even one the API repeats) never moves succeeded back, and nothing is credited again', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25 })
    await ipn(app, p.payment_id)
    for (const late of ['confirming', 'waiting', 'partially_paid', 'expired']) {
      app.np.setPayment(p.payment_id, { payment_status: late })
      const r = await ipn(app, p.payment_id)
      expect(r.status).toBe(200)
      expect(r.body.topup_status).toBe('succeeded')
    }
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '25.00' })
    expect(await balanceMicros(app, owner)).toBe(25_000_000)
  })

  test('two different finished payments on one invoice: one credit; the other is recorded for the operator and credits nothing', async () => {
    // docs/payments.md "States": a top-up is credited at most once; a further finished payment is listed for the operator.
    const { owner, topup } = await npTopup(app, '25.00')
    const a = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 10 })
    const b = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 15 })
    await Promise.all([ipn(app, b.payment_id), ipn(app, a.payment_id), ipn(app, b.payment_id)])
    const entries = await topupEntries(app, owner.tenantId)
    expect(entries).toHaveLength(1)
    const creditedRef = entries[0]!.payment_ref
    const other = creditedRef === `nowpayments:${a.payment_id}` ? b : a
    const unsettled = await app.deps.db.all(sql`SELECT payment_id, amount_micros, reason FROM unsettled_payments WHERE topup_id = ${topup.id}`)
    expect(unsettled).toEqual([
      { payment_id: String(other.payment_id), amount_micros: other === a ? 10_000_000 : 15_000_000, reason: 'topup_already_credited' },
    ])
    const credited = entries[0]!.amount_micros
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: credited === 10_000_000 ? '10.00' : '15.00' })
    expect(await balanceMicros(app, owner)).toBe(credited)
  })

  test('the database itself refuses a second credit with the same payment_ref, even inserted directly', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25 })
    await ipn(app, p.payment_id)
    const last = (await app.deps.db.get(sql`SELECT max(seq) AS seq, max(created_at) AS at FROM ledger_entries WHERE tenant_id = ${owner.tenantId}`)) as {
      seq: number
      at: number
    }
    const insert = async (kind: string) =>
      await app.deps.db.run(
        sql`INSERT INTO ledger_entries (id, tenant_id, seq, kind, amount_micros, balance_after_micros, occurred_at, detail, payment_ref, created_at) VALUES (${app.deps.newId()}, ${owner.tenantId}, ${last.seq + 1}, ${kind}, ${25_000_000}, ${50_000_000}, ${last.at}, ${'a second credit'}, ${`nowpayments:${p.payment_id}`}, ${last.at})`,
      )
    await expect(insert('topup')).rejects.toThrow(/UNIQUE constraint failed: ledger_entries\.payment_ref/)
    await expect(insert('adjustment')).rejects.toThrow(/UNIQUE constraint failed: ledger_entries\.payment_ref/)
    expect(await topupEntries(app, owner.tenantId)).toHaveLength(1)
  })
})

describe('disagreements go to review, never to a credit', () => {
  test('the payment names another order than the top-up of its invoice → review (order_mismatch)', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25, patch: { order_id: '0190f000-0000-7000-8000-000000000001' } })
    expect((await ipn(app, p.payment_id)).body).toEqual({ received: true, topup_status: 'review' })
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'review', review_reason: 'order_mismatch', credited_usd: '0.00' })
    expect(await topupEntries(app, owner.tenantId)).toEqual([])
  })

  test('the payment names our order but another invoice → review (invoice_mismatch)', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25, patch: { invoice_id: 1_000_000_001 } })
    await ipn(app, p.payment_id)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'review', review_reason: 'invoice_mismatch', credited_usd: '0.00' })
    expect(await balanceMicros(app, owner)).toBe(0)
  })

  test('the payment is priced in another currency → review (currency_mismatch)', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25, patch: { price_currency: 'eur' } })
    await ipn(app, p.payment_id)
    const t = await getTopup(app, owner, topup.id)
    expect(t).toMatchObject({ status: 'review', review_reason: 'currency_mismatch', credited_usd: '0.00' })
    expect(t.checkout_url).toBeUndefined()
    expect(await balanceMicros(app, owner)).toBe(0)
  })

  test('a payment status the service does not know → review (unknown_provider_status)', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'wrong_asset_confirmed', paidUsd: 25 })
    await ipn(app, p.payment_id)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({
      status: 'review',
      review_reason: 'unknown_provider_status',
      provider_status: 'wrong_asset_confirmed',
    })
  })

  test('a top-up in review is not credited by a later finished payment: a human decides', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const odd = app.np.pay(topup.invoice_id!, { status: 'wrong_asset_confirmed' })
    await ipn(app, odd.payment_id)
    const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25 })
    await ipn(app, p.payment_id)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'review', credited_usd: '0.00' })
    expect(await topupEntries(app, owner.tenantId)).toEqual([])
  })

  test('an IPN for an invoice that is not ours → 200 (nothing to retry), recorded as ignored, no credit anywhere', async () => {
    const res = await fetch(`${app.np.url}/v1/invoice`, {
      method: 'POST',
      headers: { 'x-api-key': app.np.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ price_amount: 50, price_currency: 'usd', order_id: 'other-shop-42', order_description: 'not gpuhq' }),
    })
    const foreign = (await res.json()) as { id: string }
    const p = app.np.pay(foreign.id, { status: 'finished', paidUsd: 50 })
    const ledger = ((await app.deps.db.get(sql`SELECT count(*) AS n FROM ledger_entries`)) as { n: number }).n
    const r = await ipn(app, p.payment_id)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ received: true, topup_status: null })
    expect(((await app.deps.db.get(sql`SELECT count(*) AS n FROM ledger_entries`)) as { n: number }).n).toBe(ledger)
    const rows = await app.deps.db.all(sql`SELECT outcome, topup_id FROM payment_notifications WHERE payment_id = ${String(p.payment_id)}`)
    expect(rows).toEqual([{ outcome: 'ignored', topup_id: null }])
  })
})

describe('when the API cannot be asked', () => {
  const faults: ['500' | 'drop' | '400', string][] = [
    ['500', 'answers 500'],
    ['drop', 'cuts the connection in the middle of its answer'],
    ['400', 'refuses the read (400)'],
  ]
  for (const [fault, what] of faults)
    test(`an API that ${what} during a notification → 503 with Retry-After (the provider retries) and nothing changes; the retry credits once`, async () => {
      const { owner, topup } = await npTopup(app, '25.00')
      const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25 })
      const before = await snapshot(app, topup.id)
      app.np.fail(fault, 'payment')
      const res = await sendIpn(app.url, app.np.ipnBody(p.payment_id))
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
      await expectProblem(res, 503, 'temporarily_unavailable')
      expect(await snapshot(app, topup.id)).toEqual(before)
      app.np.fail('none')
      expect((await ipn(app, p.payment_id)).body).toEqual({ received: true, topup_status: 'succeeded' })
      expect(await topupEntries(app, owner.tenantId)).toHaveLength(1)
    })
})
