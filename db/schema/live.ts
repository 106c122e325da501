import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * The live event stream's durable, bounded buffer (docs/events.md). Each row is written in the
 * transaction of the change it describes, so it exists exactly when that change committed. `id` is
 * the buffer's own order across tenants (AUTOINCREMENT, never handed out twice), used only inside
 * the service (which tenants have news). `seq` is the SSE event id the tenant sees: the tenant's own
 * sequence (live_event_sequences), so another tenant's activity never shows in it. Writers of events
 * take their turn until they commit (SQLite's one writer; on PostgreSQL db/client.ts commitInOrder),
 * so a tenant's seqs become visible in order, which is what lets a reader resume "after N" without
 * missing a row committed later.
 */
export const liveEvents = sqliteTable(
  'live_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    tenantId: text('tenant_id').notNull(),
    /** The event's id as the tenant sees it: 1, 2, 3… per tenant (rows from before it existed got their `id`). */
    seq: integer('seq').notNull().default(0),
    /** The server the event is about (allowlists filter on it); null for account-wide events. */
    serverId: text('server_id'),
    /** `<area>.<what>`, e.g. `presence.online`, `command.succeeded` (the catalogue is docs/events.md). */
    type: text('type').notNull(),
    /** The event's `data`, as JSON text, sent as it is. */
    payload: text('payload').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('live_events_tenant_seq').on(t.tenantId, t.seq), index('live_events_created').on(t.createdAt)],
)

/** Per tenant, the last event id (`seq`) handed out: pruning never lowers it, so an id is never handed out twice. */
export const liveEventSequences = sqliteTable('live_event_sequences', {
  tenantId: text('tenant_id').primaryKey(),
  lastSeq: integer('last_seq').notNull(),
})

/**
 * Per tenant, the highest event id (`seq`) the prune removed: a client resuming after an id below it has
 * missed events and is told so (`stream.reset`) before the stream goes on.
 */
export const liveEventHorizons = sqliteTable('live_event_horizons', {
  tenantId: text('tenant_id').primaryKey(),
  prunedThrough: integer('pruned_through').notNull(),
})
