import { integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { tenants } from './tenants'

export const serverGroups = sqliteTable(
  'server_groups',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    name: text('name').notNull(),
    position: integer('position').notNull(),
    version: integer('version').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('server_groups_tenant_name').on(t.tenantId, t.name)],
)
