import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { tenants } from './accounts'

/** Ordered plan changes. The policies of the target plan are copied in when the order is placed. */
export const subscriptionChanges = sqliteTable(
  'subscription_changes',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    fromPlan: text('from_plan').notNull(),
    targetPlan: text('target_plan').notNull(),
    direction: text('direction', { enum: ['upgrade', 'downgrade', 'lateral'] }).notNull(),
    status: text('status', { enum: ['applied', 'scheduled', 'awaiting_payment', 'cancelled', 'refused'] }).notNull(),
    refusalReason: text('refusal_reason', { enum: ['reserve_not_covered', 'direction_changed'] }),
    effectiveAt: integer('effective_at').notNull(),
    billingEffectiveDay: text('billing_effective_day').notNull(),
    requiredReserveMicros: integer('required_reserve_micros').notNull(),
    topupId: text('topup_id'),
    requestedAt: integer('requested_at').notNull(),
    appliedAt: integer('applied_at'),
    cancelledAt: integer('cancelled_at'),
    refusedAt: integer('refused_at'),
  },
  (t) => [index('subscription_changes_tenant').on(t.tenantId, t.status), index('subscription_changes_due').on(t.status, t.effectiveAt)],
)

/**
 * Superseded by plan_assignments (copied there by migration 0014); no longer read or written. Kept
 * until a later migration drops it.
 */
export const planPeriods = sqliteTable(
  'plan_periods',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    effectiveDay: text('effective_day').notNull(),
    planCode: text('plan_code').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.effectiveDay] })],
)

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

/** Things to tell a tenant, recorded in the transaction that causes them; the notifications feature delivers them. */
export const notificationEvents = sqliteTable(
  'notification_events',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    category: text('category').notNull(),
    kind: text('kind').notNull(),
    payload: text('payload', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    createdAt: integer('created_at').notNull(),
    deliveredAt: integer('delivered_at'),
  },
  (t) => [index('notification_events_tenant').on(t.tenantId, t.id)],
)
