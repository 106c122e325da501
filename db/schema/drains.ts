import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { servers } from './fleet'
import { tenants } from './tenants'

/** Where a drain stands (docs/marketplaces.md "Drain"). */
export const DRAIN_STATES = ['draining', 'awaiting_rental_end', 'working', 'relisting', 'done', 'cancelled', 'failed'] as const
export type DrainState = (typeof DRAIN_STATES)[number]

/**
 * One marketplace the drained server is linked to: the offer gpuhq kept for it (published again
 * at the end), whether the drain withdrew it, announced a maintenance window there, and put it back.
 */
export type DrainLink = {
  marketplace: string
  /** The kept offer (the link's own at the start), in PUT …/offer's names; null: nothing to relist. */
  offer: Record<string, unknown> | null
  /** Whether the platform showed the machine listed when the drain started (null: unknown). */
  listed: boolean | null
  withdrawn: boolean
  /** Whether the platform has a maintenance API (marketplace_a's dnotify); marketplace_b has none. */
  window_supported: boolean
  window_announced: boolean
  relisted: boolean
  note: string | null
}

/** The window announced to renters where the platform supports it. */
export type DrainWindow = { starts_at_us: number; hours: number; category: string }

/**
 * Drains: a server taken out for work without breaking a rental. Its offers are withdrawn, a
 * maintenance window is announced, it waits for the running rentals to end, the queued commands
 * run, then the kept offers are published again and the window cancelled. `live_server_id` is the
 * server's id while the drain is not finished (null once done, cancelled or failed): one live drain
 * per server.
 */
export const drains = sqliteTable(
  'drains',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    liveServerId: text('live_server_id'),
    /** Set when the drain was started for a group (one drain per server of the group). */
    groupId: text('group_id'),
    state: text('state', { enum: DRAIN_STATES }).notNull(),
    reason: text('reason'),
    window: text('maintenance_window', { mode: 'json' }).$type<DrainWindow>().notNull(),
    links: text('links', { mode: 'json' }).$type<DrainLink[]>().notNull(),
    /** The commands asked for in the request, issued once the offers are off. */
    work: text('work', { mode: 'json' }).$type<{ type: string; params: Record<string, unknown> }[]>().notNull(),
    /** The commands the drain waits for: those it issued and those already waiting for the rental's end. */
    commandIds: text('command_ids', { mode: 'json' }).$type<string[]>().notNull(),
    /** Why it failed, in words; the step it failed in. */
    failure: text('failure'),
    failedStep: text('failed_step'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    finishedAt: integer('finished_at'),
    version: integer('version').notNull(),
  },
  (t) => [
    index('drains_tenant').on(t.tenantId, t.createdAt),
    index('drains_server').on(t.serverId, t.createdAt),
    uniqueIndex('drains_live_server').on(t.liveServerId),
  ],
)
