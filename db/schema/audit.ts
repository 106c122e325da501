import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** Who did what in a tenant, written in the transaction of the change it records. */
export const auditLog = sqliteTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    actorKind: text('actor_kind', { enum: ['user', 'pat', 'agent', 'mcp', 'system'] }).notNull(),
    actorId: text('actor_id'),
    operation: text('operation').notNull(),
    targetKind: text('target_kind'),
    targetId: text('target_id'),
    ip: text('ip'),
    userAgent: text('user_agent'),
    outcome: text('outcome', { enum: ['succeeded', 'denied', 'failed'] }).notNull(),
    status: integer('status'),
    requestId: text('request_id'),
    detail: text('detail'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('audit_log_tenant').on(t.tenantId, t.id)],
)
