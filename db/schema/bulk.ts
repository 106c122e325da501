import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { MARKETPLACES } from '../../src/platform/marketplace-id'
import { tenants } from './tenants'

/** The change a bulk operation makes (docs/marketplaces.md "Bulk changes"); money as decimal text. */
export type BulkChange = {
  price_gpu_hour?: string
  min_bid_hour?: string
  coin_prices?: Record<string, { on_demand: string; spot?: string | null }>
}
/** Which servers a bulk operation covers, as it was asked. */
export type BulkSelection = { server_ids?: string[]; group_id?: string }
/** One side of an item's change: listed or not, and the prices (the link's projection before, the change after). */
export type BulkOffer = {
  listed: boolean | null
  price_gpu_hour: string | null
  min_bid_hour: string | null
  coin_prices: Record<string, { on_demand: string | null; spot: string | null }> | null
}

/**
 * Bulk publish / withdraw / reprice over a selection of servers on one marketplace. The operation and
 * each machine's item are kept so the bulk.run job resumes after a restart where it stopped: an item
 * is `sending` while its call is out, and `done`, `refused`, `skipped`, `failed` or `cancelled` once
 * decided (never sent again).
 */
export const bulkOperations = sqliteTable(
  'bulk_operations',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    action: text('action', { enum: ['publish', 'withdraw', 'reprice'] }).notNull(),
    change: text('change', { mode: 'json' }).$type<BulkChange>().notNull(),
    selection: text('selection', { mode: 'json' }).$type<BulkSelection>().notNull(),
    state: text('state', { enum: ['running', 'finished', 'cancelled'] }).notNull(),
    actorKind: text('actor_kind').notNull(),
    actorId: text('actor_id'),
    createdAt: integer('created_at').notNull(),
    finishedAt: integer('finished_at'),
  },
  (t) => [index('bulk_operations_tenant').on(t.tenantId, t.createdAt), index('bulk_operations_state').on(t.state, t.createdAt)],
)

export const bulkItems = sqliteTable(
  'bulk_items',
  {
    id: text('id').primaryKey(),
    operationId: text('operation_id')
      .notNull()
      .references(() => bulkOperations.id),
    tenantId: text('tenant_id').notNull(),
    position: integer('position').notNull(),
    serverId: text('server_id').notNull(),
    serverName: text('server_name').notNull(),
    externalMachineId: text('external_machine_id'),
    state: text('state', { enum: ['pending', 'sending', 'done', 'refused', 'skipped', 'failed', 'cancelled'] }).notNull(),
    before: text('before', { mode: 'json' }).$type<BulkOffer>(),
    after: text('after', { mode: 'json' }).$type<BulkOffer>(),
    reason: text('reason'),
    attempts: integer('attempts').notNull(),
    updatedAt: integer('updated_at').notNull(),
    finishedAt: integer('finished_at'),
  },
  (t) => [
    uniqueIndex('bulk_items_position').on(t.operationId, t.position),
    index('bulk_items_tenant').on(t.tenantId, t.operationId),
    index('bulk_items_state').on(t.state, t.tenantId),
  ],
)
