import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { tenants } from './tenants'

/** Per marketplace: the marketplace-wide commission, per-currency commissions and the renter markup, as entered (percent text; null: not entered). */
export type MarketplaceCosts = { commission: string | null; commissions: Record<string, string | null>; markup: string | null }

/**
 * The owner's own costs (the spec's "Cost basis"; docs/earnings.md "Cost basis"): not the
 * service's, the ledger never sees them. Every rate is nullable: null means not entered, never zero.
 */
export const costBases = sqliteTable('cost_bases', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => tenants.id),
  electricityMicrosPerKwh: integer('electricity_micros_per_kwh'),
  operationalMicrosPerMonth: integer('operational_micros_per_month'),
  marketplaces: text('marketplaces', { mode: 'json' }).$type<Record<string, MarketplaceCosts>>().notNull(),
  version: integer('version').notNull(),
  updatedAt: integer('updated_at').notNull(),
})
