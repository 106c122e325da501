import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { serverGroups } from './groups'
import { tenants } from './tenants'
import { MARKETPLACES } from '../../src/platform/marketplace-id'

// The fleet: servers with an agent, their groups, durable events and latest telemetry.
/**
 * A GPU as the agent reported it (JSON in servers.gpus): the inventory, and the per-GPU facts of
 * docs/agent.md "Facts" (absent from older agents, null when the driver does not know them).
 */
export type ServerGpu = {
  index: number
  model: string
  memory_mb?: number | null
  uuid?: string | null
  pci_bus_id?: string | null
  pcie_gen_max?: number | null
  pcie_width_max?: number | null
  power_limit_default_w?: number | null
  power_limit_min_w?: number | null
  power_limit_max_w?: number | null
  ecc_mode?: boolean | null
  persistence_mode?: boolean | null
  mig_mode?: boolean | null
  mig_devices?: number | null
  vbios_version?: string | null
}

/** The host beside its GPUs as the agent's last hello reported it (JSON in servers.host_details; docs/agent.md "Facts"). */
export type ServerHostDetails = {
  driver_version: string | null
  cuda_version: string | null
  cpu_cores: number | null
  ram_mb: number | null
  disk_free_gb: number | null
  docker_version: string | null
  docker_root: string | null
  docker_disk_free_gb: number | null
  nvidia_container_toolkit_version: string | null
}

export const servers = sqliteTable(
  'servers',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    name: text('name').notNull(),
    createdAt: integer('created_at').notNull(),
    decommissionedAt: integer('decommissioned_at'),
    /** Monotonic, for ETag / If-Match on the server's configuration. */
    version: integer('version').notNull().default(1),
    hostname: text('hostname'),
    fingerprint: text('fingerprint'),
    publicIp: text('public_ip'),
    diskGb: integer('disk_gb'),
    portRange: text('port_range'),
    agentVersion: text('agent_version'),
    /** JSON array of the GPUs the agent reported: {index, model, memory_mb, uuid}. */
    gpus: text('gpus', { mode: 'json' }).$type<ServerGpu[]>().notNull().default([]),
    gpuCount: integer('gpu_count').notNull().default(0),
    gpuModel: text('gpu_model').notNull().default(''),
    /** JSON object of the host's driver, CUDA, CPU, memory, disk and container facts; null until an agent reported them. */
    hostDetails: text('host_details', { mode: 'json' }).$type<ServerHostDetails>(),
    groupId: text('group_id').references(() => serverGroups.id),
    /** JSON array of `key` or `key:value` tags. */
    tags: text('tags', { mode: 'json' }).$type<string[]>().notNull().default([]),
    /** Owner's electricity tariff, micro-USD per kWh. */
    electricityMicrosPerKwh: integer('electricity_micros_per_kwh'),
    maintenanceSince: integer('maintenance_since'),
    maintenanceReason: text('maintenance_reason'),
    presence: text('presence', { enum: ['online', 'suspect', 'offline'] })
      .notNull()
      .default('offline'),
    /** Last heartbeat of the live session; null until the command channel came up once. */
    lastSeenAt: integer('last_seen_at'),
    /** Last HTTPS hello (never makes the server online). */
    lastHelloAt: integer('last_hello_at'),
    agentTokenHash: text('agent_token_hash'),
    enrolledAt: integer('enrolled_at'),
    /** Rental fact set by the operator (PATCH) or the agent (rental.* events); the latest write wins. */
    rentalActive: integer('rental_active', { mode: 'boolean' }).notNull().default(false),
    rentalSource: text('rental_source'),
    rentalUpdatedAt: integer('rental_updated_at'),
    /**
     * Rental fact the marketplaces.sync job keeps: the marketplaces whose linked machine reports a
     * running rental (empty when none). A rental runs when this or rentalActive says so.
     */
    marketRentals: text('market_rentals', { mode: 'json' }).$type<string[]>().notNull().default([]),
  },
  (t) => [
    index('servers_tenant').on(t.tenantId),
    uniqueIndex('servers_agent_token').on(t.agentTokenHash),
    index('servers_presence').on(t.presence, t.lastSeenAt),
  ],
)

/** Typed durable server events: presence transitions, maintenance, enrolment, agent reports. */
export const serverEvents = sqliteTable(
  'server_events',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    kind: text('kind').notNull(),
    severity: text('severity', { enum: ['info', 'warning', 'error', 'critical'] }).notNull(),
    message: text('message').notNull(),
    data: text('data', { mode: 'json' }).$type<Record<string, unknown>>(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('server_events_server').on(t.serverId, t.id)],
)

/** "Keep this server on this marketplace" flags. */
export const serverKeepOn = sqliteTable(
  'server_keep_on',
  {
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    tenantId: text('tenant_id').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.serverId, t.marketplace] })],
)

/**
 * The latest value of each metric per server and GPU (gpu_index -1 for host scope). On SQLite a
 * `WITHOUT ROWID` table (db/migrations/0042_latest_metrics_without_rowid.sql): the rows live in the
 * primary key's b-tree, read by the Prometheus scrape in key order. drizzle-kit cannot express it,
 * so a generated migration that recreates this table must get `WITHOUT ROWID` back by hand.
 */
export const serverLatestMetrics = sqliteTable(
  'server_latest_metrics',
  {
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    gpuIndex: integer('gpu_index').notNull(),
    metric: text('metric').notNull(),
    value: real('value'),
    t: integer('t').notNull(),
  },
  (t) => [primaryKey({ columns: [t.serverId, t.gpuIndex, t.metric] })],
)

/**
 * NVIDIA Xid errors the agent read from the kernel log (agent.gpu.xid events), counted per server,
 * GPU (-1 when the kernel's PCI address named no GPU the agent knows) and Xid number: the
 * Prometheus counter gpuhq_gpu_xid_errors_total reads this, not the event history.
 */
export const serverXidCounts = sqliteTable(
  'server_xid_counts',
  {
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    gpuIndex: integer('gpu_index').notNull(),
    xid: integer('xid').notNull(),
    count: integer('count').notNull(),
    lastAt: integer('last_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.serverId, t.gpuIndex, t.xid] })],
)

/** The consistent fleet snapshot per tenant (GET /servers), refreshed by fleet.snapshot. */
export const fleetSnapshots = sqliteTable('fleet_snapshots', {
  tenantId: text('tenant_id').primaryKey(),
  generatedAt: integer('generated_at').notNull(),
  dataAsOf: integer('data_as_of').notNull(),
  /** Set when a write made the snapshot out of date; the next read recomputes it. */
  dirty: integer('dirty', { mode: 'boolean' }).notNull(),
  /**
   * JSON array of fleet rows. Last on purpose: SQLite reads a row's columns in order, and a body
   * larger than a page spills into overflow pages, so a column after it costs a walk down that chain
   * on every read of the head (migration 0028 moved it here).
   */
  body: text('body', { mode: 'json' }).$type<unknown[]>().notNull(),
})
