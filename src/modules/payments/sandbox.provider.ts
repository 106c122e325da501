import { createHmac } from 'node:crypto'
import { withTransaction } from '../../../db/client'
import { perDeps, type Deps } from '../../platform/context'
import { formatMoney, MoneyFormatError, parseMoney } from '../../platform/money'
import { deriveKey, safeEqual } from '../../platform/secrets'
import { invalidPaymentField, PaymentErrors } from './payments.errors'
import type { PaymentMethod, PaymentProvider, ProviderPayment } from './provider'
import {
  findSandboxInvoice,
  findSandboxPayment,
  insertSandboxInvoice,
  insertSandboxPayment,
  markSandboxInvoicePaid,
  type SandboxInvoiceRow,
} from './sandbox.repository'

/**
 * The sandbox provider (docs/payments.md; never in production: the configuration refuses it there): its checkout page
 * (${PUBLIC_URL}/sandbox/checkout/{invoice_id}) records an outcome and then sends a signed
 * notification to /api/v1/billing/providers/sandbox/notify over HTTP, exactly as a real provider
 * would; the balance moves only through that notification, after the payment is read back from the
 * sandbox's own books.
 */
export const SANDBOX_OUTCOMES = ['finished', 'partially_paid', 'expired', 'unknown'] as const
const KINDS: Record<string, ProviderPayment['kind']> = { finished: 'finished', partially_paid: 'partial', expired: 'expired', waiting: 'pending' }

/** Where the service listens, so the sandbox can notify it over HTTP; set once the server is up. */
const selfUrl = perDeps((): { url: string | null } => ({ url: null }))
export function setSandboxSelfUrl(deps: Deps, url: string): void {
  selfUrl(deps).url = url
}

export function sandboxSignature(deps: Pick<Deps, 'config'>, rawBody: string): string {
  return createHmac('sha256', deriveKey(deps.config.secretKey, 'sandbox-notifications')).update(rawBody).digest('hex')
}

export function createSandbox(deps: Deps): PaymentProvider {
  const methods: PaymentMethod[] = [
    { code: 'card', label: 'Card (sandbox)', provider: 'sandbox', minAmountMicros: 1_000_000 },
    { code: 'usdt_tron', label: 'USDT on Tron (sandbox)', provider: 'sandbox', minAmountMicros: 5_000_000 },
  ]
  return {
    name: 'sandbox',
    methods,
    async createInvoice({ topupId, amountMicros, method }) {
      const invoiceId = deps.newId()
      await withTransaction(deps.db, (tx) =>
        insertSandboxInvoice(tx, { invoiceId, orderId: topupId, priceAmountMicros: amountMicros, method, createdAt: deps.clock.nowUs() }),
      )
      return { invoiceId, checkoutUrl: `${deps.config.publicUrl}/sandbox/checkout/${invoiceId}` }
    },
    verifyNotification(rawBody, headers) {
      const sig = headers.get('x-sandbox-signature')
      if (!sig || !safeEqual(sandboxSignature(deps, rawBody), sig)) return null
      try {
        const body = JSON.parse(rawBody) as Record<string, unknown>
        if (typeof body.payment_id !== 'string') return null
        return {
          paymentId: body.payment_id,
          invoiceId: typeof body.invoice_id === 'string' ? body.invoice_id : null,
          orderId: typeof body.order_id === 'string' ? body.order_id : null,
          reportedStatus: String(body.payment_status ?? ''),
        }
      } catch {
        return null
      }
    },
    async fetchPayment(paymentId) {
      const p = await findSandboxPayment(deps.db, paymentId)
      if (!p)
        return {
          paymentId,
          invoiceId: null,
          orderId: null,
          status: 'unknown',
          kind: 'unknown',
          priceCurrency: null,
          priceAmountMicros: null,
          confirmedMicros: null,
        }
      const inv = await findSandboxInvoice(deps.db, p.invoiceId)
      const kind = KINDS[p.status] ?? 'unknown'
      return {
        paymentId,
        invoiceId: p.invoiceId,
        orderId: inv?.orderId ?? null,
        status: p.status,
        kind,
        priceCurrency: 'usd',
        priceAmountMicros: p.priceAmountMicros,
        confirmedMicros: kind === 'finished' || kind === 'partial' ? p.paidMicros : null,
      }
    },
  }
}

/** The invoice the checkout page shows. */
export async function sandboxInvoice(deps: Deps, invoiceId: string): Promise<SandboxInvoiceRow> {
  const inv = await findSandboxInvoice(deps.db, invoiceId)
  if (!inv) throw PaymentErrors.invoiceNotFound()
  return inv
}

/**
 * The checkout page's POST: record the outcome, then notify the service as a provider would. Like a
 * real provider, the sandbox never confirms more than was invoiced (a larger or non-positive amount
 * answers 422), and an invoice paid by a finished outcome refuses every further outcome (409): the
 * check and the payment are one transaction, so of many presses at once exactly one is accepted.
 */
export async function sandboxPay(deps: Deps, invoiceId: string, input: { outcome: (typeof SANDBOX_OUTCOMES)[number]; amount_usd?: string }) {
  let amount: number | null = null
  if (input.amount_usd !== undefined) {
    try {
      amount = parseMoney(input.amount_usd)
    } catch (e) {
      if (e instanceof MoneyFormatError) throw invalidPaymentField('/amount_usd', 'format', e.message)
      throw e
    }
  }
  const inv = await sandboxInvoice(deps, invoiceId)
  const paymentId = deps.newId()
  const paid = amount ?? inv.priceAmountMicros
  if (paid <= 0) throw invalidPaymentField('/amount_usd', 'too_small', 'the amount paid must be above zero')
  if (paid > inv.priceAmountMicros)
    throw invalidPaymentField(
      '/amount_usd',
      'exceeds_invoice',
      `the invoice is for ${formatMoney(inv.priceAmountMicros)} USD; the sandbox never confirms more than was invoiced`,
    )
  await withTransaction(deps.db, async (tx) => {
    if ((await findSandboxInvoice(tx, invoiceId))!.status !== 'open') throw PaymentErrors.invoiceAlreadyPaid()
    if (input.outcome === 'finished') await markSandboxInvoicePaid(tx, invoiceId)
    await insertSandboxPayment(tx, {
      paymentId,
      invoiceId,
      status: input.outcome,
      priceAmountMicros: inv.priceAmountMicros,
      paidMicros: paid,
      createdAt: deps.clock.nowUs(),
    })
  })
  const body = JSON.stringify({
    payment_id: paymentId,
    invoice_id: invoiceId,
    order_id: inv.orderId,
    payment_status: input.outcome,
    price_amount: formatMoney(inv.priceAmountMicros),
    price_currency: 'usd',
    actually_paid: formatMoney(paid),
  })
  const base = selfUrl(deps).url ?? deps.config.publicUrl
  const res = await fetch(`${base}/api/v1/billing/providers/sandbox/notify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sandbox-signature': sandboxSignature(deps, body) },
    body,
  })
  await res.body?.cancel()
  return { payment_id: paymentId, notification_status: res.status }
}
