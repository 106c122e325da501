import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { nowpaymentsSignature } from '../../src/modules/payments/nowpayments.provider'
import { expectProblem } from '../support/problem'
import { npSign, sendIpn } from '../support/nowpayments'
import { balanceMicros, getTopup, ipn, notificationsOf, npTopup, snapshot, startPaymentsApp, topupEntries, type PaymentsApp } from '../support/payments'

/**
 * docs/payments.md "NOWPayments: what is trusted, and why": NOWPayments IPNs are verified with
 * HMAC-SHA512 over JSON.stringify(body, sorted top-level keys) under the IPN secret (header
 * x-nowpayments-sig). Anything that does not verify is refused with 401 before anything is read or
 * written. The documented formula leaves nested objects out of the signature, so a change inside
 * `fee` still verifies; it must not matter, because crediting uses only the payment read back from
 * the API.
 */

let app: PaymentsApp
beforeAll(async () => {
  app = await startPaymentsApp('nowpayments')
})
afterAll(() => app.stop())

/** A top-up whose payment the API reports finished for `paidUsd`, nothing yet notified. */
async function paidTopup(paidUsd = 25) {
  const { owner, topup } = await npTopup(app, '25.00')
  const payment = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd })
  return { owner, topup, payment }
}

const paymentReads = () => app.np.requests.filter((r) => r.method === 'GET').length

describe('the documented signature formula', () => {
  test('the fake signs exactly as the service verifies, and the replacer empties nested objects (so they are not signed)', () => {
    const body = { payment_id: 1, fee: { currency: 'sol', depositFee: '0' }, actually_paid: 6.0 }
    expect(JSON.stringify(body, Object.keys(body).sort())).toBe('{"actually_paid":6,"fee":{},"payment_id":1}')
    const expected = createHmac('sha512', 'secret').update('{"actually_paid":6,"fee":{},"payment_id":1}').digest('hex')
    expect(npSign(body, 'secret')).toBe(expected)
    expect(nowpaymentsSignature(body, 'secret')).toBe(expected)
  })
})

describe('a notification that does not verify → 401 and nothing changes', () => {
  const cases: [string, (body: Record<string, unknown>) => Parameters<typeof sendIpn>[2]][] = [
    ['a forged signature (random hex)', () => ({ signature: 'ab'.repeat(64) })],
    ['a signature made with the wrong IPN secret', () => ({ secret: 'not-the-ipn-secret' })],
    ['no x-nowpayments-sig header', () => ({ noSignature: true })],
    ['an empty signature header', () => ({ signature: '' })],
    [
      'a signature over the body with all keys sorted at every depth (the community variant, not the documented one)',
      (b) => ({
        signature: createHmac('sha512', app.np.ipnSecret)
          .update(
            JSON.stringify(
              b,
              Object.keys(b)
                .concat(Object.keys(b.fee as object))
                .sort(),
            ),
          )
          .digest('hex'),
      }),
    ],
    ['a one-byte change in payment_status after signing', () => ({ tamper: (b) => ({ ...b, payment_status: 'finishee' }) })],
    ['a one-byte change in actually_paid after signing (25 → 95)', () => ({ tamper: (b) => ({ ...b, actually_paid: 95 }) })],
    ['a one-byte change in actually_paid_at_fiat after signing', () => ({ tamper: (b) => ({ ...b, actually_paid_at_fiat: 26 }) })],
    ['a one-byte change in payment_id after signing', () => ({ tamper: (b) => ({ ...b, payment_id: (b.payment_id as number) + 1 }) })],
    // The last character becomes another one (a UUID ending in 0 must not stay the same).
    [
      'a one-byte change in order_id after signing',
      () => ({ tamper: (b) => ({ ...b, order_id: `${String(b.order_id).slice(0, -1)}${String(b.order_id).endsWith('0') ? '1' : '0'}` }) }),
    ],
    ['a one-byte change in price_currency after signing (usd → usc)', () => ({ tamper: (b) => ({ ...b, price_currency: 'usc' }) })],
    ['a top-level field added after signing', () => ({ tamper: (b) => ({ ...b, bonus: 1 }) })],
  ]
  for (const [what, opts] of cases)
    test(`${what}`, async () => {
      const { owner, topup, payment } = await paidTopup()
      const body = app.np.ipnBody(payment.payment_id)
      const before = await snapshot(app, topup.id)
      const reads = paymentReads()
      const res = await sendIpn(app.url, body, opts(body))
      await expectProblem(res, 401, 'unauthorized')
      expect(await snapshot(app, topup.id)).toEqual(before)
      expect(paymentReads()).toBe(reads) // verified before anything is asked or written
      expect(await notificationsOf(app, topup.id)).toEqual([])
      expect(await topupEntries(app, owner.tenantId)).toEqual([])
      expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'creating', credited_usd: '0.00', provider_status: null })
      // The genuine notification still works afterwards: the refusal was about the signature alone.
      expect((await ipn(app, payment.payment_id)).status).toBe(200)
      expect((await getTopup(app, owner, topup.id)).status).toBe('succeeded')
    })

  test('a body that is not JSON, even signed over its bytes, is refused (422 invalid_json) and records nothing', async () => {
    const { topup } = await paidTopup()
    const before = await snapshot(app, topup.id)
    const raw = 'payment_id=1&payment_status=finished'
    const res = await fetch(`${app.url}/api/v1/billing/providers/nowpayments/notify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-nowpayments-sig': createHmac('sha512', app.np.ipnSecret).update(raw).digest('hex') },
      body: raw,
    })
    const p = await expectProblem(res, 422, 'validation_failed')
    expect(p.errors?.[0]?.code).toBe('invalid_json')
    expect(await snapshot(app, topup.id)).toEqual(before)
  })
})

describe('what the signature does cover, and what it does not', () => {
  test('the keys may arrive in any order: the signature is over the sorted keys', async () => {
    const { owner, topup, payment } = await paidTopup()
    const body = app.np.ipnBody(payment.payment_id)
    const reversed = Object.fromEntries(Object.entries(body).reverse())
    const res = await sendIpn(app.url, reversed, { signature: npSign(body, app.np.ipnSecret) })
    expect(res.status).toBe(200)
    await res.text()
    expect((await getTopup(app, owner, topup.id)).status).toBe('succeeded')
  })

  test('a change only inside the nested fee object still verifies (the documented weakness) and credits only the read-back figure', async () => {
    const { owner, topup, payment } = await paidTopup(25)
    const body = app.np.ipnBody(payment.payment_id)
    // Only keys that are not also top-level keys drop out of the signed string inside `fee`.
    const forgedFee = { currency: 'usd', depositFee: -1000, serviceFee: -1000, withdrawalFee: 99999 }
    expect(JSON.stringify({ ...body, fee: forgedFee }, Object.keys(body).sort())).toBe(JSON.stringify(body, Object.keys(body).sort()))
    const res = await sendIpn(app.url, body, { tamper: (b) => ({ ...b, fee: forgedFee }) })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ received: true, topup_status: 'succeeded' })
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '25.00' })
    expect(await balanceMicros(app, owner)).toBe(25_000_000)
    expect(await topupEntries(app, owner.tenantId)).toEqual([
      { amount_micros: 25_000_000, payment_ref: `nowpayments:${payment.payment_id}`, balance_after_micros: 25_000_000 },
    ])
  })

  test('a key named like a top-level field, slipped into fee, is covered by the replacer (it applies at every depth) → 401', async () => {
    const { topup, payment } = await paidTopup(25)
    const body = app.np.ipnBody(payment.payment_id)
    const before = await snapshot(app, topup.id)
    const res = await sendIpn(app.url, body, { tamper: (b) => ({ ...b, fee: { ...(b.fee as object), actually_paid_at_fiat: 9999 } }) })
    await expectProblem(res, 401, 'unauthorized')
    expect(await snapshot(app, topup.id)).toEqual(before)
  })

  test('a genuine notification claiming more than was paid credits what the API says was paid', async () => {
    const { owner, topup, payment } = await paidTopup(25)
    // Signed by the provider (the attacker cannot), but the API is the source of the figures.
    app.np.setPayment(payment.payment_id, { actually_paid: 12, actually_paid_at_fiat: 12 })
    const r = await ipn(app, payment.payment_id, { actually_paid: 500, actually_paid_at_fiat: 500, price_amount: 500 })
    expect(r.status).toBe(200)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '12.00' })
    expect(await balanceMicros(app, owner)).toBe(12_000_000)
  })

  test('when the API gives no fiat figure, the credit is the price share of the coins actually paid (top-level figures only)', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    // 0.0005 BTC due at 50 000 USD per coin; 0.0004 paid → 20.00 USD.
    const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 20, rate: 50_000, fiat: false })
    expect(p.actually_paid_at_fiat).toBeUndefined()
    expect((await ipn(app, p.payment_id)).status).toBe(200)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '20.00' })
  })
})
