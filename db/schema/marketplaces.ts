import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { tenants } from './accounts'
import { servers } from './fleet'

/**
 * A tenant's account at a marketplace (docs/marketplaces.md "Connecting an account"). The API key
 * is sealed with AES-256-GCM under a key derived from SECRET_KEY (key_box) and kept as a keyed hash
 * (key_hash) so a client can tell the same key from a new one; it is never returned, logged or
 * audited. `status` is `invalid_key` only when the marketplace rejected the stored key.
 */
export const marketplaceAccounts = sqliteTable(
  'marketplace_accounts',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    marketplace: text('marketplace', { enum: ['marketplace_a', 'marketplace_b'] }).notNull(),
    status: text('status', { enum: ['connected', 'invalid_key'] }).notNull(),
    keyBox: text('key_box').notNull(),
    keyHash: text('key_hash').notNull(),
    owner: text('owner').notNull(),
    holdingMicros: integer('holding_micros'),
    connectedAt: integer('connected_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    lastSuccessAt: integer('last_success_at'),
    lastFailureAt: integer('last_failure_at'),
    lastFailure: text('last_failure'),
  },
  (t) => [uniqueIndex('marketplace_accounts_tenant').on(t.tenantId, t.marketplace)],
)

/**
 * Every call gpuhq made to a marketplace for a tenant: what, when, by whom, the outcome and the
 * latency; never the key (docs/marketplaces.md "Operations log").
 */
export const marketplaceOperations = sqliteTable(
  'marketplace_operations',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    marketplace: text('marketplace', { enum: ['marketplace_a', 'marketplace_b'] }).notNull(),
    serverId: text('server_id').references(() => servers.id),
    operation: text('operation').notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    status: integer('status'),
    outcome: text('outcome', { enum: ['ok', 'rejected_key', 'missing_permission', 'unavailable', 'retried'] }).notNull(),
    latencyMs: integer('latency_ms').notNull(),
    actorKind: text('actor_kind').notNull(),
    actorId: text('actor_id'),
    startedAt: integer('started_at').notNull(),
  },
  (t) => [index('marketplace_operations_tenant').on(t.tenantId, t.id), index('marketplace_operations_server').on(t.tenantId, t.serverId, t.id)],
)
