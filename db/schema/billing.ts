import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { sql } from 'drizzle-orm'
import { tenants } from './tenants'

/**
 * The ledger: append-only (triggers refuse UPDATE and DELETE), integer micro-USD, one running
 * balance per tenant. `seq` orders a tenant's entries as they were booked, so balance_after is
 * always the sum of the entries up to it.
 */
export const ledgerEntries = sqliteTable(
  'ledger_entries',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    seq: integer('seq').notNull(),
    kind: text('kind', { enum: ['charge', 'topup', 'adjustment'] }).notNull(),
    amountMicros: integer('amount_micros').notNull(),
    balanceAfterMicros: integer('balance_after_micros').notNull(),
    occurredAt: integer('occurred_at').notNull(),
    chargeDay: text('charge_day'),
    chargeHour: integer('charge_hour'),
    detail: text('detail').notNull(),
    calculationId: text('calculation_id'),
    /** Provider payment a top-up credit belongs to: at most one credit per payment. */
    paymentRef: text('payment_ref'),
    /** The top-up a `topup` credit belongs to: at most one positive credit per top-up. */
    topupId: text('topup_id'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('ledger_tenant_seq').on(t.tenantId, t.seq),
    // Exactly one charge per tenant and hour, whatever reruns, processes or crashes do. The hour
    // leads: an hourly run's entries all land at the end of this index (a few pages), where a
    // tenant-led one took a page per tenant (docs/billing.md "What a charge writes").
    uniqueIndex('ledger_one_charge_per_hour').on(t.chargeHour, t.tenantId).where(sql`kind = 'charge'`),
    uniqueIndex('ledger_one_credit_per_payment').on(t.paymentRef).where(sql`payment_ref IS NOT NULL`),
    // A top-up is credited at most once, whatever payments arrive for it.
    uniqueIndex('ledger_one_credit_per_topup').on(t.topupId).where(sql`topup_id IS NOT NULL AND kind = 'topup' AND amount_micros > 0`),
    index('ledger_tenant_occurred').on(t.tenantId, t.occurredAt, t.id),
  ],
)

export const balances = sqliteTable('balances', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => tenants.id),
  balanceMicros: integer('balance_micros').notNull(),
  lastSeq: integer('last_seq').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/** What one hourly charge was made of: plan, price, servers (by id), days of the month. */
export const chargeCalculations = sqliteTable(
  'charge_calculations',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    chargeHour: integer('charge_hour').notNull(),
    planCode: text('plan_code').notNull(),
    priceMicrosPerServerMonth: integer('price_micros_per_server_month').notNull(),
    daysInMonth: integer('days_in_month').notNull(),
    servers: integer('servers').notNull(),
    /** JSON array of the server ids charged, sorted. */
    serverIds: text('server_ids', { mode: 'json' }).$type<string[]>().notNull(),
    amountMicros: integer('amount_micros').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  // One calculation per tenant and hour, the hour first for the same reason as the ledger's
  // ledger_one_charge_per_hour. A tenant's calculations are found through its ledger entries
  // (ledger_tenant_occurred, then this table's id), so no index here leads with the tenant.
  (t) => [uniqueIndex('charge_calculations_hour_tenant').on(t.chargeHour, t.tenantId)],
)

/** billing.charge's watermark: every hour before `chargedUntil` is booked for every tenant. */
export const billingState = sqliteTable('billing_state', {
  key: text('key').primaryKey(),
  chargedUntil: integer('charged_until').notNull(),
  updatedAt: integer('updated_at').notNull(),
})
