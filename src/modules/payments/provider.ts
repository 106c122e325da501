/**
 * A payment provider, as the top-up flow sees it: the methods it offers, a hosted invoice, a
 * verified notification, and reading a payment back (the only figures that are ever credited).
 */
export type PaymentMethod = { code: string; label: string; provider: string; minAmountMicros: number }

/** What a provider says about one payment, read back from the provider itself. */
export type ProviderPayment = {
  paymentId: string
  invoiceId: string | null
  orderId: string | null
  /** The provider's own status word. */
  status: string
  kind: 'finished' | 'partial' | 'pending' | 'expired' | 'failed' | 'refunded' | 'unknown'
  priceCurrency: string | null
  priceAmountMicros: number | null
  /** USD actually confirmed for this payment; null when the provider gave no usable figure. */
  confirmedMicros: number | null
}

type VerifiedNotification = { paymentId: string; invoiceId: string | null; orderId: string | null; reportedStatus: string }

export class ProviderRejected extends Error {}
export class ProviderUnavailable extends Error {}

export interface PaymentProvider {
  readonly name: string
  readonly methods: PaymentMethod[]
  /** Creates the hosted invoice. Throws ProviderRejected (a definite no) or ProviderUnavailable (unknown outcome). */
  createInvoice(input: { topupId: string; amountMicros: number; method: string; description: string }): Promise<{ invoiceId: string; checkoutUrl: string }>
  /** The notification if its signature holds over these exact bytes and headers, else null. */
  verifyNotification(rawBody: string, headers: Headers): VerifiedNotification | null
  /** Reads the payment back from the provider. Throws ProviderUnavailable. */
  fetchPayment(paymentId: string): Promise<ProviderPayment>
}
