import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { tenants } from './tenants'

/**
 * The plan catalogue (docs/billing.md), seeded by migration and editable by the
 * operator. Prices are integer micro-USD per managed server per month; null means contract-priced.
 */
export const plans = sqliteTable('plans', {
  code: text('code').primaryKey(),
  label: text('label').notNull(),
  priceMicrosPerServerMonth: integer('price_micros_per_server_month'),
  /** fleet.servers.max; null means unlimited. */
  serversMax: integer('servers_max'),
  /** JSON array of feature flags, e.g. ["strategy","ai_access"]. */
  features: text('features', { mode: 'json' }).$type<string[]>().notNull(),
  upgradeEffective: text('upgrade_effective', { enum: ['same_day', 'next_day'] }).notNull(),
  downgradeEffective: text('downgrade_effective', { enum: ['next_month', 'next_day'] }).notNull(),
  position: integer('position').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/**
 * Which plan prices a tenant's hours from which instant on (the charge job reads it): one row per
 * change, never edited, so an hour is priced by the plan in force during it whenever it is booked.
 * `plan_code` null: no plan from then on (nothing billed). `effective_from` is an hour or day start.
 */
export const planAssignments = sqliteTable(
  'plan_assignments',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    effectiveFrom: integer('effective_from').notNull(),
    planCode: text('plan_code'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.effectiveFrom] })],
)

/**
 * Catalogue price versions: the monthly price per server of a plan from an instant on. A catalogue
 * edit adds one (and the price before it from the beginning of time), so past hours keep their price.
 * `price_micros_per_server_month` null: contract-priced.
 */
export const planPrices = sqliteTable(
  'plan_prices',
  {
    planCode: text('plan_code').notNull(),
    effectiveFrom: integer('effective_from').notNull(),
    priceMicrosPerServerMonth: integer('price_micros_per_server_month'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.planCode, t.effectiveFrom] })],
)
