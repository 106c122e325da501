import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { balanceMicros, getTopup, ipn, npTopup, startPaymentsApp, type PaymentsApp } from '../support/payments'

/**
 * Issue 13 finding 8: the provider's figures are read as exact decimals and the credit is computed
 * in integers, with the rule docs/payments.md states: rounded down to the micro-dollar, never above
 * what arrived. Each case is one that float arithmetic (Number(x).toFixed(6), Math.round(p × a ÷ b))
 * gets wrong.
 */
let app: PaymentsApp
beforeAll(async () => {
  app = await startPaymentsApp('nowpayments')
})
afterAll(() => app.stop())

async function credited(invoice: string, patch: Record<string, unknown>): Promise<string> {
  const { owner, topup } = await npTopup(app, invoice)
  const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 1 })
  app.np.setPayment(p.payment_id, patch as never)
  expect((await ipn(app, p.payment_id)).status).toBe(200)
  const t = await getTopup(app, owner, topup.id)
  expect(t.status).toBe('succeeded')
  expect(await balanceMicros(app, owner)).toBe(Math.round(Number(t.credited_usd) * 1e6))
  return t.credited_usd
}

describe('the fiat figure the API gives (actually_paid_at_fiat)', () => {
  const cases: [string, number | string, string][] = [
    ['seven decimals just under a cent are not rounded up to it', 24.9999999, '24.999999'],
    ['a half micro-dollar is not rounded up (toFixed rounds this one up, its neighbours down)', 1.0000005, '1.00'],
    ['a decimal string is read exactly', '19.999999999', '19.999999'],
    ['a small figure is read exactly', 2.5e-5, '0.000025'],
  ]
  for (const [what, fiat, expected] of cases)
    test(`${what}: ${fiat} → ${expected}`, async () => {
      expect(await credited('25.00', { actually_paid_at_fiat: fiat as number })).toBe(expected)
    })
})

describe('no fiat figure: the price share of the coins paid, price × actually_paid ÷ pay_amount', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['20.00 × 1 ÷ 3 is 6.6666666…: rounded down, not to nearest', { price_amount: 20, pay_amount: 3, actually_paid: 1 }, '6.666666'],
    ['BTC with 8 decimals: 25.00 × 0.00041233 ÷ 0.00041234', { price_amount: 25, pay_amount: 0.00041234, actually_paid: 0.00041233 }, '24.999393'],
    ['a tiny payment written with an exponent: 25.00 × 5.9e-7 ÷ 0.5', { price_amount: 25, pay_amount: 0.5, actually_paid: 5.9e-7 }, '0.000029'],
  ]
  for (const [what, figures, expected] of cases)
    test(`${what} → ${expected}`, async () => {
      // The API leaves actually_paid_at_fiat out (undefined is not serialised).
      expect(await credited('25.00', { ...figures, actually_paid_at_fiat: undefined })).toBe(expected)
    })
})

describe('the invoice', () => {
  test('price_amount is sent as a JSON number written from the decimal itself', async () => {
    const { topup } = await npTopup(app, '20.000001')
    const sent = app.np.requests.filter((r) => r.path === '/v1/invoice' && r.body?.order_id === topup.id)
    expect(sent).toHaveLength(1)
    expect(sent[0]!.body!.price_amount).toBe(20.000001)
  })
})
