import { createHmac } from 'node:crypto'

/**
 * A local fake of the NOWPayments API (api.nowpayments.io), speaking its wire format as its API
 * documentation (Postman collection) shows it:
 *
 * - POST /v1/invoice, header `x-api-key`, JSON `{price_amount, price_currency, pay_currency?,
 *   order_id, order_description, ipn_callback_url, success_url, cancel_url}` → 200
 *   `{id, token_id, order_id, order_description, price_amount, price_currency, pay_currency,
 *   ipn_callback_url, invoice_url, success_url, cancel_url, created_at, updated_at}` (ids and
 *   amounts as strings, as the documentation's example answers them).
 * - GET /v1/payment/{payment_id}, header `x-api-key` → 200 `{payment_id, invoice_id,
 *   payment_status, pay_address, price_amount, price_currency, pay_amount, actually_paid,
 *   actually_paid_at_fiat?, pay_currency, order_id, order_description, outcome_amount,
 *   outcome_currency, created_at, updated_at}` (numeric ids and amounts, as documented).
 * - A wrong or missing key → 403 `{status: false, statusCode: 403, code: "INVALID_API_KEY", message}`.
 *
 * The IPN a real NOWPayments would send is built by `ipnBody` (the payment's top-level fields plus
 * a nested `fee` object) and delivered by `sendIpn`, signed with the documented formula:
 * `x-nowpayments-sig` = hex HMAC-SHA512(ipnSecret, JSON.stringify(body, Object.keys(body).sort())).
 * The signature is computed here, independently of src/.
 *
 * Faults (`fail`): `500` (an HTML error page), `400` (a refusal with the documented error body),
 * `hang` (never answers until the mode changes or the fake closes), `drop` (answers 200 headers
 * and then cuts the connection mid-body). Each applies to `invoice`, `payment` or `all` requests.
 */
const NP_API_KEY = 'np-test-api-key-0001'
const NP_IPN_SECRET = 'np-test-ipn-secret-0001'

type NpFault = 'none' | '500' | '400' | 'hang' | 'drop'
type NpInvoice = {
  id: string
  token_id: string
  order_id: string
  order_description: string
  price_amount: string
  price_currency: string
  pay_currency: string | null
  ipn_callback_url: string
  invoice_url: string
  success_url: string
  cancel_url: string
  created_at: string
  updated_at: string
}
type NpPayment = {
  payment_id: number
  invoice_id: number
  payment_status: string
  pay_address: string
  price_amount: number
  price_currency: string
  pay_amount: number
  actually_paid: number
  actually_paid_at_fiat?: number
  pay_currency: string
  order_id: string
  order_description: string
  purchase_id: string
  outcome_amount: number
  outcome_currency: string
  created_at: string
  updated_at: string
}
type NpRequest = { method: string; path: string; apiKey: string | null; body: Record<string, unknown> | null }

export type FakeNowPayments = {
  /** The origin to put in NOWPAYMENTS_API_URL. */
  url: string
  apiKey: string
  ipnSecret: string
  requests: NpRequest[]
  invoices: Map<string, NpInvoice>
  payments: Map<number, NpPayment>
  /** How many invoices were created (accepted POST /v1/invoice). */
  invoicesCreated: () => number
  fail: (fault: NpFault, scope?: 'invoice' | 'payment' | 'all') => void
  /**
   * A payment on the invoice (a new one, or the same `payment_id` moved on). `paidUsd` is what the
   * customer actually paid, in USD; `pay_currency` is USDT at 1:1 unless `rate` (USD per coin) says
   * otherwise; `fiat` false leaves out actually_paid_at_fiat (the provider does not always send it).
   */
  pay: (invoiceId: string, p: { status: string; paidUsd?: number; paymentId?: number; rate?: number; fiat?: boolean; patch?: Partial<NpPayment> }) => NpPayment
  /** Overwrites fields of a payment as the API will answer them from now on. */
  setPayment: (paymentId: number, patch: Partial<NpPayment>) => NpPayment
  /** The IPN body NOWPayments would send for this payment as it stands (plus `overrides`). */
  ipnBody: (paymentId: number, overrides?: Record<string, unknown>) => Record<string, unknown>
  close: () => Promise<void>
}

/** The documented IPN signature: HMAC-SHA512 over the body stringified with its sorted top-level keys as replacer. */
export function npSign(body: Record<string, unknown>, secret: string): string {
  return createHmac('sha512', secret)
    .update(JSON.stringify(body, Object.keys(body).sort()))
    .digest('hex')
}

export type IpnOptions = {
  /** Secret to sign with (default: the fake's IPN secret). */
  secret?: string
  /** Signature header value to send instead of the computed one. */
  signature?: string
  /** Leave the signature header out. */
  noSignature?: boolean
  /** Changes the body after it was signed (a tamperer on the way). */
  tamper?: (body: Record<string, unknown>) => Record<string, unknown>
}

/** POSTs an IPN to the app's notify URL as NOWPayments does (JSON body, `x-nowpayments-sig`). */
export async function sendIpn(appUrl: string, body: Record<string, unknown>, opts: IpnOptions = {}): Promise<Response> {
  const sig = opts.signature ?? npSign(body, opts.secret ?? NP_IPN_SECRET)
  const sent = opts.tamper ? opts.tamper(structuredClone(body)) : body
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'NOWPayments IPN' }
  if (!opts.noSignature) headers['x-nowpayments-sig'] = sig
  return fetch(`${appUrl}/api/v1/billing/providers/nowpayments/notify`, { method: 'POST', headers, body: JSON.stringify(sent) })
}

const iso = () => new Date().toISOString()
const round = (n: number, digits: number) => Number(n.toFixed(digits))

export async function startFakeNowPayments(): Promise<FakeNowPayments> {
  const requests: NpRequest[] = []
  const invoices = new Map<string, NpInvoice>()
  const payments = new Map<number, NpPayment>()
  const faults: Record<'invoice' | 'payment', NpFault> = { invoice: 'none', payment: 'none' }
  const hanging = new Set<() => void>()
  const release = () => {
    for (const r of hanging) r()
    hanging.clear()
  }
  let nextInvoice = 4_522_625_843
  let nextPayment = 5_524_759_814
  let created = 0

  const refusal = (statusCode: number, code: string, message: string) => Response.json({ status: false, statusCode, code, message }, { status: statusCode })

  async function faulted(fault: NpFault): Promise<Response | null> {
    if (fault === 'none') return null
    if (fault === '500') return new Response('<html><body>502 Bad Gateway</body></html>', { status: 500, headers: { 'content-type': 'text/html' } })
    if (fault === '400') return refusal(400, 'INVALID_REQUEST_PARAMS', 'price_amount is too small')
    if (fault === 'hang') {
      await new Promise<void>((resolve) => hanging.add(resolve))
      return new Response('<html>gateway timeout</html>', { status: 504 })
    }
    // drop: 200 headers and a few bytes of body are on the wire, then the connection is reset.
    let chunks = 0
    const stream = new ReadableStream({
      async pull(controller) {
        if (chunks++ === 0) {
          controller.enqueue(new TextEncoder().encode('{"payment_id":'))
          return
        }
        await Bun.sleep(20)
        controller.error() // no reason: Bun resets the connection without logging
      },
    })
    return new Response(stream, { status: 200, headers: { 'content-type': 'application/json' } })
  }

  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url)
      const apiKey = request.headers.get('x-api-key')
      let body: Record<string, unknown> | null = null
      if (request.method === 'POST') {
        try {
          body = (await request.json()) as Record<string, unknown>
        } catch {
          return refusal(400, 'INVALID_REQUEST_PARAMS', 'body is not JSON')
        }
      }
      requests.push({ method: request.method, path: url.pathname, apiKey, body })

      if (request.method === 'POST' && url.pathname === '/v1/invoice') {
        const f = await faulted(faults.invoice)
        if (f) return f
        if (apiKey !== NP_API_KEY) return refusal(403, 'INVALID_API_KEY', 'Invalid api key')
        const b = body!
        if (typeof b.price_amount !== 'number' || !(b.price_amount > 0) || typeof b.price_currency !== 'string')
          return refusal(400, 'INVALID_REQUEST_PARAMS', '"price_amount" must be a positive number')
        const id = String(nextInvoice++)
        const now = iso()
        const inv: NpInvoice = {
          id,
          token_id: `tok${id.slice(-6)}`,
          order_id: String(b.order_id ?? ''),
          order_description: String(b.order_description ?? ''),
          price_amount: String(b.price_amount),
          price_currency: String(b.price_currency),
          pay_currency: typeof b.pay_currency === 'string' ? b.pay_currency : null,
          ipn_callback_url: String(b.ipn_callback_url ?? ''),
          invoice_url: `https://nowpayments.io/payment/?iid=${id}`,
          success_url: String(b.success_url ?? ''),
          cancel_url: String(b.cancel_url ?? ''),
          created_at: now,
          updated_at: now,
        }
        invoices.set(id, inv)
        created++
        return Response.json(inv)
      }

      const m = /^\/v1\/payment\/([^/]+)$/.exec(url.pathname)
      if (request.method === 'GET' && m) {
        const f = await faulted(faults.payment)
        if (f) return f
        if (apiKey !== NP_API_KEY) return refusal(403, 'INVALID_API_KEY', 'Invalid api key')
        const p = payments.get(Number(m[1]))
        if (!p) return refusal(404, 'PAYMENT_NOT_FOUND', 'Payment not found')
        return Response.json(p)
      }
      return refusal(404, 'NOT_FOUND', 'Not found')
    },
  })

  const setPayment = (paymentId: number, patch: Partial<NpPayment>) => {
    const p = payments.get(paymentId)
    if (!p) throw new Error(`the fake has no payment ${paymentId}`)
    Object.assign(p, patch, { updated_at: iso() })
    return p
  }

  return {
    url: `http://127.0.0.1:${server.port}`,
    apiKey: NP_API_KEY,
    ipnSecret: NP_IPN_SECRET,
    requests,
    invoices,
    payments,
    invoicesCreated: () => created,
    fail: (fault, scope = 'all') => {
      if (scope === 'all' || scope === 'invoice') faults.invoice = fault
      if (scope === 'all' || scope === 'payment') faults.payment = fault
      if (fault !== 'hang') release()
    },
    pay: (invoiceId, { status, paidUsd, paymentId, rate = 1, fiat = true, patch = {} }) => {
      const inv = invoices.get(invoiceId)
      if (!inv) throw new Error(`the fake has no invoice ${invoiceId}`)
      const price = Number(inv.price_amount)
      const payAmount = round(price / rate, 6)
      const paid = paidUsd === undefined ? 0 : round(paidUsd / rate, 6)
      const id = paymentId ?? nextPayment++
      const now = iso()
      const prev = payments.get(id)
      const p: NpPayment = {
        payment_id: id,
        invoice_id: Number(inv.id),
        payment_status: status,
        pay_address: 'TNDFkiSmBQorNFacb3735q8MnT29sn8BLn',
        price_amount: price,
        price_currency: inv.price_currency,
        pay_amount: payAmount,
        actually_paid: paid,
        ...(fiat ? { actually_paid_at_fiat: paidUsd ?? 0 } : {}),
        pay_currency: inv.pay_currency ?? 'usdttrc20',
        order_id: inv.order_id,
        order_description: inv.order_description,
        purchase_id: String(6_084_744_717 + id - 5_524_759_814),
        outcome_amount: round(paid * 0.995, 6),
        outcome_currency: inv.pay_currency ?? 'usdttrc20',
        created_at: prev?.created_at ?? now,
        updated_at: now,
        ...patch,
      }
      payments.set(id, p)
      return p
    },
    setPayment,
    ipnBody: (paymentId, overrides = {}) => {
      const p = payments.get(paymentId)
      if (!p) throw new Error(`the fake has no payment ${paymentId}`)
      return {
        ...p,
        fee: { currency: p.pay_currency, depositFee: 0.01, withdrawalFee: 0, serviceFee: round(p.actually_paid * 0.005, 6) },
        ...overrides,
      }
    },
    close: async () => {
      release()
      await server.stop(true)
    },
  }
}
