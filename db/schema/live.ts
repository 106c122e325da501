import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * The live event stream's durable, bounded buffer (docs/events.md). Each row is written in the
 * transaction of the change it describes, so it exists exactly when that change committed. `id` is
 * the SSE event id: AUTOINCREMENT, so an id is never handed out twice, even after the newest rows
 * were pruned, and (SQLite having one writer at a time) ids grow in commit order, which is what
 * lets a reader resume "after id N" without missing a row committed later.
 */
export const liveEvents = sqliteTable(
  'live_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    tenantId: text('tenant_id').notNull(),
    /** The server the event is about (allowlists filter on it); null for account-wide events. */
    serverId: text('server_id'),
    /** `<area>.<what>`, e.g. `presence.online`, `command.succeeded` (the catalogue is docs/events.md). */
    type: text('type').notNull(),
    /** The event's `data`, as JSON text, sent as it is. */
    payload: text('payload').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('live_events_tenant').on(t.tenantId, t.id), index('live_events_created').on(t.createdAt)],
)

/**
 * Per tenant, the highest event id the prune removed: a client resuming after an id below it has
 * missed events and is told so (`stream.reset`) before the stream goes on.
 */
export const liveEventHorizons = sqliteTable('live_event_horizons', {
  tenantId: text('tenant_id').primaryKey(),
  prunedThrough: integer('pruned_through').notNull(),
})
