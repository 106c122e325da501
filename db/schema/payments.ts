import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { tenants } from './tenants'

/**
 * Top-ups: an invoice at a payment provider and what became of it. The balance moves only through
 * a ledger `topup` entry written when a verified provider payment is confirmed (one per payment,
 * by the ledger's unique payment_ref).
 */
export const topups = sqliteTable(
  'topups',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    provider: text('provider').notNull(),
    paymentMethod: text('payment_method').notNull(),
    amountMicros: integer('amount_micros').notNull(),
    purposeKind: text('purpose_kind', { enum: ['wallet', 'subscription_change'] }).notNull(),
    targetPlan: text('target_plan'),
    changeId: text('change_id'),
    status: text('status', { enum: ['creating', 'partially_paid', 'succeeded', 'review', 'expired', 'failed'] }).notNull(),
    providerStatus: text('provider_status'),
    reviewReason: text('review_reason'),
    invoiceId: text('invoice_id'),
    checkoutUrl: text('checkout_url'),
    paymentId: text('payment_id'),
    creditedMicros: integer('credited_micros').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    succeededAt: integer('succeeded_at'),
    version: integer('version').notNull(),
  },
  (t) => [index('topups_tenant').on(t.tenantId, t.id), uniqueIndex('topups_invoice').on(t.provider, t.invoiceId), index('topups_status').on(t.status)],
)

/** Every verified notification, kept for the record (replays and reorderings are visible). */
export const paymentNotifications = sqliteTable(
  'payment_notifications',
  {
    id: text('id').primaryKey(),
    provider: text('provider').notNull(),
    topupId: text('topup_id'),
    paymentId: text('payment_id'),
    reportedStatus: text('reported_status'),
    outcome: text('outcome').notNull(),
    bodySha256: text('body_sha256').notNull(),
    receivedAt: integer('received_at').notNull(),
  },
  (t) => [index('payment_notifications_topup').on(t.topupId)],
)

/**
 * Finished provider payments that credited nothing: a further payment for a top-up that had already
 * succeeded (a top-up is credited at most once), or one for a top-up in review or failed. The
 * operator lists them (`scripts/admin unsettled-payments`) and settles each: by an adjustment, or as
 * refunded at the provider. One row per provider payment.
 */
export const unsettledPayments = sqliteTable(
  'unsettled_payments',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    topupId: text('topup_id').notNull(),
    provider: text('provider').notNull(),
    paymentId: text('payment_id').notNull(),
    /** What the provider confirmed for this payment; null when it gave no usable figure. */
    amountMicros: integer('amount_micros'),
    reason: text('reason', { enum: ['topup_already_credited', 'topup_in_review', 'topup_failed'] }).notNull(),
    recordedAt: integer('recorded_at').notNull(),
    settledAt: integer('settled_at'),
    settlement: text('settlement', { enum: ['credited', 'refunded'] }),
    /** The adjustment that credited it, when settled by one. */
    settlementEntryId: text('settlement_entry_id'),
    settlementNote: text('settlement_note'),
  },
  (t) => [uniqueIndex('unsettled_payments_payment').on(t.provider, t.paymentId), index('unsettled_payments_open').on(t.settledAt, t.recordedAt)],
)

/** The sandbox provider's own books: what its checkout page was told happened. */
export const sandboxPayments = sqliteTable('sandbox_payments', {
  paymentId: text('payment_id').primaryKey(),
  invoiceId: text('invoice_id').notNull(),
  status: text('status').notNull(),
  priceAmountMicros: integer('price_amount_micros').notNull(),
  paidMicros: integer('paid_micros').notNull(),
  createdAt: integer('created_at').notNull(),
})

export const sandboxInvoices = sqliteTable('sandbox_invoices', {
  invoiceId: text('invoice_id').primaryKey(),
  orderId: text('order_id').notNull(),
  priceAmountMicros: integer('price_amount_micros').notNull(),
  method: text('method').notNull(),
  createdAt: integer('created_at').notNull(),
  /** open until a finished outcome pays it; a paid invoice refuses every further outcome (409). */
  status: text('status', { enum: ['open', 'paid'] })
    .notNull()
    .default('open'),
})
