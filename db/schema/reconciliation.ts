import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { tenants } from './tenants'
import { MARKETPLACES } from '../../src/platform/marketplace-id'

/**
 * Payouts reconciled (docs/marketplaces.md "Payouts reconciled"): the owner's threshold, the
 * platform's invoice / payout history and wallet balances the reconciliation.evaluate job read, and
 * the (server, marketplace, day) rows it flagged (the payout_gap alert is open while any is).
 */

/** The owner's setting: a row whose unexplained shortfall passes `gap_threshold_usd_micros` is flagged. No row: the default. */
export const reconciliationSettings = sqliteTable('reconciliation_settings', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => tenants.id),
  gapThresholdUsdMicros: integer('gap_threshold_usd_micros').notNull(),
  version: integer('version').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/** One entry of a platform's invoice / payout history (marketplace_a's `/api/v1/invoices`), USD, as last read. */
export const platformPayouts = sqliteTable(
  'platform_payouts',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    externalId: text('external_id').notNull(),
    type: text('type').notNull(),
    /** UTC day of the entry's start, and the start and end in microseconds. */
    day: text('day').notNull(),
    startAt: integer('start_at').notNull(),
    endAt: integer('end_at'),
    amountUsdMicros: integer('amount_usd_micros').notNull(),
    description: text('description').notNull(),
    observedAt: integer('observed_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.marketplace, t.externalId] }), index('platform_payouts_tenant_day').on(t.tenantId, t.day)],
)

/** A wallet's balance per coin as last read on a UTC day (marketplace_b's `/v1/wallets`); `usd_micros` at the rate the sync last carried (null: none). */
export const walletBalances = sqliteTable(
  'wallet_balances',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    currency: text('currency').notNull(),
    day: text('day').notNull(),
    balance: text('balance').notNull(),
    usdMicros: integer('usd_micros'),
    observedAt: integer('observed_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.marketplace, t.currency, t.day] })],
)

/** A (server, marketplace, day) whose unexplained shortfall passed the threshold when last evaluated. */
export const reconciliationFlags = sqliteTable(
  'reconciliation_flags',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    serverId: text('server_id').notNull(),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    day: text('day').notNull(),
    gapUsdMicros: integer('gap_usd_micros').notNull(),
    flaggedAt: integer('flagged_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.serverId, t.marketplace, t.day] })],
)
