import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import type { MarketplaceBProjection, RemoteProjection } from '../../src/modules/marketplaces/adapters/marketplaces.adapter'
import { servers } from './fleet'
import { tenants } from './tenants'
import { MARKETPLACES } from '../../src/platform/marketplace-id'

/** An idle job as gpuhq keeps it on a link: USD money as decimal strings (per GPU-hour, per TB). */
export type IdleJobSetting = {
  image: string
  args: string
  price_gpu_hour: string
  price_inet_up_tb: string | null
  price_inet_down_tb: string | null
  set_at: number
}

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
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
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
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    serverId: text('server_id').references(() => servers.id),
    operation: text('operation').notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    status: integer('status'),
    outcome: text('outcome', { enum: ['ok', 'rejected_key', 'missing_permission', 'unavailable', 'refused', 'retried'] }).notNull(),
    latencyMs: integer('latency_ms').notNull(),
    /** Why the service made the call on its own (e.g. keep-on re-publishing an unlisted offer); null when asked. */
    reason: text('reason'),
    actorKind: text('actor_kind').notNull(),
    actorId: text('actor_id'),
    startedAt: integer('started_at').notNull(),
  },
  (t) => [index('marketplace_operations_tenant').on(t.tenantId, t.id), index('marketplace_operations_server').on(t.tenantId, t.serverId, t.id)],
)

/**
 * A server of the tenant bound to a machine on a marketplace (the spec's "Server-to-machine link").
 * One link per (server, marketplace); the account's deletion (DELETE /marketplaces/{marketplace})
 * drops its links by cascade. `remote` and `marketplace_b` are the normalised projection last read
 * from the platform's live listing. `state`: linked, stale (the machine stopped appearing; the link
 * is kept) or conflict (one machine claimed by two servers of the tenant).
 */
export const marketplaceLinks = sqliteTable(
  'marketplace_links',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    accountId: text('account_id')
      .notNull()
      .references(() => marketplaceAccounts.id, { onDelete: 'cascade' }),
    externalMachineId: text('external_machine_id').notNull(),
    bindMode: text('bind_mode', { enum: ['manual', 'agent'] }).notNull(),
    state: text('state', { enum: ['linked', 'stale', 'conflict'] }).notNull(),
    linkedAt: integer('linked_at').notNull(),
    lastSeenAt: integer('last_seen_at'),
    remote: text('remote', { mode: 'json' }).$type<RemoteProjection>().notNull(),
    marketplaceB: text('marketplace_b', { mode: 'json' }).$type<MarketplaceBProjection | null>(),
    /** The last offer published through gpuhq, as the API took it (keep-on re-publishes it); null after a withdrawal. */
    offer: text('offer', { mode: 'json' }).$type<Record<string, unknown> | null>(),
    offerPublishedAt: integer('offer_published_at'),
    /**
     * Rolling end date (docs/marketplaces.md "Rolling end dates"): keep the offer's end date at least
     * this many days ahead; null: off. `end_date_extended_to` is the end date gpuhq last set on its own
     * (µs), so a listing the platform has not re-read yet is never extended twice to the same horizon.
     */
    endDateDays: integer('end_date_days'),
    endDateExtendedTo: integer('end_date_extended_to'),
    endDateExtendedAt: integer('end_date_extended_at'),
    /** The idle job gpuhq set on the machine (docs/marketplaces.md "Idle jobs"); null when none was set or it was removed. */
    idleJob: text('idle_job', { mode: 'json' }).$type<IdleJobSetting | null>(),
  },
  (t) => [
    uniqueIndex('marketplace_links_server').on(t.tenantId, t.serverId, t.marketplace),
    index('marketplace_links_machine').on(t.tenantId, t.marketplace, t.externalMachineId),
  ],
)

/**
 * Asking prices on a platform's public market, per normalised GPU model, as one marketplaces.sync
 * run read them (USD micro-dollars per GPU-hour). The latest row per (marketplace, model) answers
 * GET /marketplaces/stats; older rows answer price movement. Kept 90 days.
 */
export const marketSnapshots = sqliteTable(
  'market_snapshots',
  {
    id: text('id').primaryKey(),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    gpuModel: text('gpu_model').notNull(),
    takenAt: integer('taken_at').notNull(),
    /** Offers with a price, and the GPUs they hold. */
    count: integer('count').notNull(),
    gpus: integer('gpus').notNull(),
    minMicros: integer('min_micros').notNull(),
    p25Micros: integer('p25_micros').notNull(),
    medianMicros: integer('median_micros').notNull(),
    p75Micros: integer('p75_micros').notNull(),
    maxMicros: integer('max_micros').notNull(),
    /** Every asking price of the model, ascending (standing percentiles are computed against them). */
    prices: text('prices', { mode: 'json' }).$type<number[]>().notNull(),
  },
  (t) => [index('market_snapshots_model').on(t.marketplace, t.gpuModel, t.takenAt), index('market_snapshots_taken').on(t.takenAt)],
)

/**
 * A renter's report about a linked machine, as the marketplaces.sync job read it from the platform
 * (docs/marketplaces.md "Renter reports"; Vast only). The platform gives a report no id, so
 * `report_key` is a hash of what it does give (`created_at`, problem, message), unique per machine of
 * the tenant: a report read again by the next sync is the same row. `server_id` is the server the
 * machine was linked to when the report was first read; `alerted` says whether it opened an alert
 * (a report older than the link is kept as history without one).
 */
export const renterReports = sqliteTable(
  'renter_reports',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    externalMachineId: text('external_machine_id').notNull(),
    reportKey: text('report_key').notNull(),
    problem: text('problem'),
    message: text('message'),
    /** When the renter reported it (the platform's `created_at`); null when the platform did not say. */
    reportedAt: integer('reported_at'),
    /** When gpuhq first read it. */
    seenAt: integer('seen_at').notNull(),
    alerted: integer('alerted', { mode: 'boolean' }).notNull(),
  },
  (t) => [
    uniqueIndex('renter_reports_key').on(t.tenantId, t.marketplace, t.externalMachineId, t.reportKey),
    index('renter_reports_server').on(t.tenantId, t.serverId, t.id),
  ],
)
