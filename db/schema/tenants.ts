import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const tenants = sqliteTable('tenants', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** Catalogue code of the tenant's plan; null means no plan assignment (409 plan_required). */
  planCode: text('plan_code'),
  /** Account state for billing: active, grace or frozen. */
  accountState: text('account_state', { enum: ['active', 'grace', 'frozen'] })
    .notNull()
    .default('active'),
  /** When the balance went below zero (grace started); null while active. */
  graceSince: integer('grace_since'),
  frozenAt: integer('frozen_at'),
  /** Moves on with every change of plan or pending plan change: ETag / If-Match of GET /subscription. */
  subscriptionVersion: integer('subscription_version').notNull().default(1),
  createdAt: integer('created_at').notNull(),
})
