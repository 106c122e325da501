import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { sql } from 'drizzle-orm'
import { tenants } from './tenants'

/**
 * An alert incident (docs/alerts.md): one cause (`cause_key`, e.g. `offline:<server>`) of a tenant,
 * opened by an event or a threshold, seen again while open (`occurrences`, `last_seen_at`),
 * acknowledged by a member, and resolved when its condition clears (or by a member). At most one
 * incident per cause is open at a time (the partial unique index), so a cause is deduplicated.
 */
export const alertIncidents = sqliteTable(
  'alert_incidents',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    kind: text('kind').notNull(),
    causeKey: text('cause_key').notNull(),
    severity: text('severity', { enum: ['info', 'warning', 'critical'] }).notNull(),
    serverId: text('server_id'),
    marketplace: text('marketplace'),
    title: text('title').notNull(),
    detail: text('detail').notNull(),
    /** `open` and `acknowledged` are both unresolved. */
    state: text('state', { enum: ['open', 'acknowledged', 'resolved'] }).notNull(),
    openedAt: integer('opened_at').notNull(),
    lastSeenAt: integer('last_seen_at').notNull(),
    occurrences: integer('occurrences').notNull(),
    acknowledgedAt: integer('acknowledged_at'),
    acknowledgedBy: text('acknowledged_by'),
    resolvedAt: integer('resolved_at'),
    resolvedBy: text('resolved_by'),
    resolution: text('resolution'),
    /** The notifications this incident produced (ids in the notifications module). */
    notificationIds: text('notification_ids', { mode: 'json' }).$type<string[]>().notNull(),
  },
  (t) => [
    index('alert_incidents_tenant').on(t.tenantId, t.id),
    uniqueIndex('alert_incidents_open_cause').on(t.tenantId, t.causeKey).where(sql`state <> 'resolved'`),
    // When a cause was last resolved (raising it again, linking its notifications): one lookup, not
    // a walk through every incident of the tenant.
    index('alert_incidents_cause_resolved').on(t.tenantId, t.causeKey, t.resolvedAt),
  ],
)
