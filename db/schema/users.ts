import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { tenants } from './tenants'

export const users = sqliteTable(
  'users',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    /** Lower-cased; one account per address across the deployment. */
    email: text('email').notNull(),
    passwordHash: text('password_hash'),
    role: text('role', { enum: ['owner', 'admin', 'operator', 'viewer'] }).notNull(),
    displayName: text('display_name'),
    timezone: text('timezone').notNull().default('UTC'),
    locale: text('locale').notNull().default('en'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('users_email').on(t.email), index('users_tenant').on(t.tenantId)],
)
