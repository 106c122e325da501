import { createHmac } from 'node:crypto'
import { request } from 'undici'
import type { Config } from '../../config'
import { decimalToMicrosFloor, formatMoney, parseDecimal, shareOfMicrosFloor } from '../../platform/money'
import { safeEqual } from '../../platform/secrets'
import { ProviderRejected, ProviderUnavailable, type PaymentMethod, type PaymentProvider, type ProviderPayment } from './provider'

/**
 * NOWPayments (docs/payments.md): hosted invoices (POST /v1/invoice with
 * x-api-key), IPN notifications signed with HMAC-SHA512 over the body serialised with its
 * top-level keys sorted (their documented formula, which leaves nested objects out of the
 * signature — so nothing nested is ever trusted), and the payment read back with
 * GET /v1/payment/{id} before anything is credited.
 */
const TIMEOUT_MS = 10_000
/** Stands for price_amount while the invoice body is serialised (replaced by the decimal's digits). */
const PRICE = '__gpuhq_price_amount__'

const KINDS: Record<string, ProviderPayment['kind']> = {
  finished: 'finished',
  partially_paid: 'partial',
  waiting: 'pending',
  confirming: 'pending',
  confirmed: 'pending',
  sending: 'pending',
  expired: 'expired',
  failed: 'failed',
  refunded: 'refunded',
}

/** What the documented verifier computes: JSON.stringify with the sorted top-level keys as the replacer. */
export function nowpaymentsSignature(body: Record<string, unknown>, ipnSecret: string): string {
  return createHmac('sha512', ipnSecret)
    .update(JSON.stringify(body, Object.keys(body).sort()))
    .digest('hex')
}

/** A USD figure of the API → micro-USD, exactly, rounded down past the sixth decimal. */
const toMicros = (v: unknown): number | null => {
  const d = parseDecimal(v)
  return d === null ? null : decimalToMicrosFloor(d)
}

/** `beforeCall`: the service's durability barrier, awaited before each request leaves the process. */
export function createNowPayments(config: Config, beforeCall: () => Promise<void>): PaymentProvider {
  const np = config.nowpayments!
  const methods: PaymentMethod[] = [
    { code: 'usdt_tron', label: 'USDT (TRC-20)', provider: 'nowpayments', minAmountMicros: 10_000_000 },
    { code: 'btc', label: 'Bitcoin', provider: 'nowpayments', minAmountMicros: 20_000_000 },
    { code: 'eth', label: 'Ether', provider: 'nowpayments', minAmountMicros: 20_000_000 },
    { code: 'crypto', label: 'Any cryptocurrency (chosen on the payment page)', provider: 'nowpayments', minAmountMicros: 10_000_000 },
  ]
  const payCurrency: Record<string, string | undefined> = { usdt_tron: 'usdttrc20', btc: 'btc', eth: 'eth' }

  async function call(method: 'GET' | 'POST', path: string, body?: string) {
    let res: Awaited<ReturnType<typeof request>>
    let text: string
    await beforeCall()
    try {
      res = await request(`${np.apiUrl}${path}`, {
        method,
        headers: { 'x-api-key': np.apiKey, 'content-type': 'application/json' },
        body,
        headersTimeout: TIMEOUT_MS,
        bodyTimeout: TIMEOUT_MS,
        // Bun's built-in undici ignores headersTimeout/bodyTimeout: only the signal bounds the call.
        signal: AbortSignal.timeout(TIMEOUT_MS),
      })
      text = await res.body.text()
    } catch (e) {
      throw new ProviderUnavailable(`nowpayments unreachable: ${e instanceof Error ? e.message : String(e)}`)
    }
    if (res.statusCode >= 500 || res.statusCode === 429) throw new ProviderUnavailable(`nowpayments answered ${res.statusCode}`)
    let json: Record<string, unknown>
    try {
      json = JSON.parse(text)
    } catch {
      throw new ProviderUnavailable('nowpayments answered something that is not JSON')
    }
    if (res.statusCode >= 400) throw new ProviderRejected(String(json.message ?? `nowpayments refused (${res.statusCode})`).slice(0, 256))
    return json
  }

  return {
    name: 'nowpayments',
    methods,
    async createInvoice({ topupId, amountMicros, method, description }) {
      const body = JSON.stringify({
        price_amount: PRICE,
        price_currency: 'usd',
        ...(payCurrency[method] ? { pay_currency: payCurrency[method] } : {}),
        order_id: topupId,
        order_description: description,
        ipn_callback_url: `${config.publicUrl}/api/v1/billing/providers/nowpayments/notify`,
        success_url: `${config.publicUrl}/payments/return`,
        cancel_url: `${config.publicUrl}/payments/return`,
      })
      // The API takes price_amount as a JSON number: written from the decimal string, never a float.
      const json = await call('POST', '/v1/invoice', body.replace(`"${PRICE}"`, formatMoney(amountMicros)))
      const invoiceId = json.id === undefined || json.id === null ? null : String(json.id)
      if (!invoiceId || typeof json.invoice_url !== 'string') throw new ProviderUnavailable('nowpayments created no usable invoice')
      return { invoiceId, checkoutUrl: json.invoice_url }
    },
    verifyNotification(rawBody, headers) {
      const sig = headers.get('x-nowpayments-sig')
      if (!sig) return null
      let body: Record<string, unknown>
      try {
        body = JSON.parse(rawBody)
      } catch {
        return null
      }
      if (!body || typeof body !== 'object' || Array.isArray(body)) return null
      if (!safeEqual(nowpaymentsSignature(body, np.ipnSecret), sig.toLowerCase())) return null
      if (body.payment_id === undefined || body.payment_id === null) return null
      return {
        paymentId: String(body.payment_id),
        invoiceId: body.invoice_id === undefined || body.invoice_id === null ? null : String(body.invoice_id),
        orderId: typeof body.order_id === 'string' ? body.order_id : null,
        reportedStatus: String(body.payment_status ?? ''),
      }
    },
    async fetchPayment(paymentId) {
      const p = await call('GET', `/v1/payment/${encodeURIComponent(paymentId)}`)
      const status = String(p.payment_status ?? '')
      const kind = KINDS[status] ?? 'unknown'
      const price = toMicros(p.price_amount)
      let confirmed: number | null = null
      if (kind === 'finished' || kind === 'partial') {
        // Only top-level figures: the fiat value of what was actually paid, else its share of the
        // price (price × paid ÷ due in integers, rounded down: never more than what arrived).
        const fiat = toMicros(p.actually_paid_at_fiat)
        const paid = parseDecimal(p.actually_paid)
        const due = parseDecimal(p.pay_amount)
        if (fiat !== null && fiat > 0) confirmed = fiat
        else if (price !== null && paid !== null && due !== null && due.units > 0n) confirmed = shareOfMicrosFloor(price, paid, due)
      }
      return {
        paymentId: String(p.payment_id ?? paymentId),
        invoiceId: p.invoice_id === undefined || p.invoice_id === null ? null : String(p.invoice_id),
        orderId: typeof p.order_id === 'string' ? p.order_id : null,
        status,
        kind,
        priceCurrency: typeof p.price_currency === 'string' ? p.price_currency.toLowerCase() : null,
        priceAmountMicros: price,
        confirmedMicros: confirmed,
      }
    },
  }
}
