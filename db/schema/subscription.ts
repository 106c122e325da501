import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { tenants } from './tenants'

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
