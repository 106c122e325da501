import { createHash } from 'node:crypto'
import { eq, isNull } from 'drizzle-orm'
import { fleetSnapshots, servers } from '../../../db/schema'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { latestMetricsOf, managedServers, type ServerRow } from './fleet.repository'

/**
 * The fleet snapshot behind GET /servers and GET /dashboard: every managed server's row, computed
 * in one read and kept per tenant. It is refreshed every 60 s by `fleet.snapshot`; a write through
 * the API or a presence transition marks it out of date so the next read recomputes it. A read of a
 * snapshot older than 60 s is served at once with `stale: true` while a refresh runs
 * (stale-while-revalidate).
 */
export const SNAPSHOT_TTL_US = 60_000_000
export const SNAPSHOT_SHAPE_VERSION = 1

export type FleetRow = ReturnType<typeof fleetRow>
export type Snapshot = { generatedAt: number; dataAsOf: number; rows: FleetRow[]; stale: boolean; staleReason: string | null }

const round1 = (n: number) => Math.round(n * 10) / 10

export function fleetRow(s: ServerRow, metrics: Map<number, Map<string, number | null>>) {
  // One vitals entry per GPU (the agent's inventory and any GPU that reported), ordered by index.
  const inventory = (JSON.parse(s.gpus) as { index: number }[]).map((g) => g.index)
  const gpuIndexes = [...new Set([...inventory, ...[...metrics.keys()].filter((i) => i >= 0)])].sort((a, b) => a - b)
  const gpuValues = (metric: string) => gpuIndexes.map((i) => metrics.get(i)?.get(metric)).filter((v): v is number => typeof v === 'number')
  const max = (metric: string) => {
    const v = gpuValues(metric)
    return v.length ? Math.max(...v) : null
  }
  const util = gpuValues('utilization_pct')
  return {
    id: s.id,
    name: s.name,
    agent_version: s.agentVersion,
    gpu_count: s.gpuCount,
    gpu_model: s.gpuModel,
    fsm_state: 'new' as const,
    ...(s.maintenanceSince !== null ? { maintenance: { since: formatTimestamp(s.maintenanceSince), reason: s.maintenanceReason } } : {}),
    presence: s.presence,
    marketplace: null as string | null,
    price_usd_gpu_h: null as string | null,
    health: null as string | null,
    last_seen_at: formatNullableTimestamp(s.lastSeenAt),
    revenue_today_usd: '0.00',
    max_temp_core_c: max('temperature_c'),
    max_temp_hotspot_c: max('hotspot_temperature_c'),
    max_temp_vram_c: max('memory_temperature_c'),
    max_fan_pct: max('fan_pct'),
    avg_util_pct: util.length ? (util.reduce((a, b) => a + b, 0) / util.length).toFixed(2) : null,
    group_id: s.groupId,
    tags: JSON.parse(s.tags) as string[],
    gpu_vitals: gpuIndexes.slice(0, 128).map((i) => ({
      index: i,
      temp_c: valueOrNull(metrics.get(i)?.get('temperature_c')),
      fan_pct: valueOrNull(metrics.get(i)?.get('fan_pct')),
    })),
    // Not part of the wire row: kept for the q filter on hostname.
    _hostname: s.hostname,
  }
}

function valueOrNull(v: number | null | undefined): number | null {
  return typeof v === 'number' ? round1(v) : null
}

function compute(db: DbOrTx, tenantId: string): FleetRow[] {
  const list = managedServers(db, tenantId)
  const byServer = new Map<string, Map<number, Map<string, number | null>>>()
  for (const m of latestMetricsOf(
    db,
    list.map((s) => s.id),
  )) {
    let gpus = byServer.get(m.serverId)
    if (!gpus) byServer.set(m.serverId, (gpus = new Map()))
    let metrics = gpus.get(m.gpuIndex)
    if (!metrics) gpus.set(m.gpuIndex, (metrics = new Map()))
    metrics.set(m.metric, m.value)
  }
  return list.map((s) => fleetRow(s, byServer.get(s.id) ?? new Map()))
}

/** Recomputes and stores the tenant's snapshot in one transaction (a consistent read). */
export function refreshSnapshot(deps: Deps, tenantId: string): Snapshot {
  return withTransaction(deps.db, (tx) => {
    const now = deps.clock.nowUs()
    const rows = compute(tx, tenantId)
    const body = JSON.stringify(rows)
    tx.insert(fleetSnapshots)
      .values({ tenantId, generatedAt: now, dataAsOf: now, body, dirty: false })
      .onConflictDoUpdate({ target: fleetSnapshots.tenantId, set: { generatedAt: now, dataAsOf: now, body, dirty: false } })
      .run()
    return { generatedAt: now, dataAsOf: now, rows, stale: false, staleReason: null }
  })
}

const refreshing = new Set<string>()

export function readSnapshot(deps: Deps, tenantId: string): Snapshot {
  const row = deps.db.select().from(fleetSnapshots).where(eq(fleetSnapshots.tenantId, tenantId)).get()
  if (!row || row.dirty) return refreshSnapshot(deps, tenantId)
  const age = deps.clock.nowUs() - row.generatedAt
  const stale = age > SNAPSHOT_TTL_US
  if (stale && !refreshing.has(tenantId)) {
    refreshing.add(tenantId)
    setTimeout(() => {
      try {
        refreshSnapshot(deps, tenantId)
      } catch (e) {
        deps.log.error('fleet snapshot refresh failed', { tenant_id: tenantId, error: e })
      } finally {
        refreshing.delete(tenantId)
      }
    }, 0)
  }
  return {
    generatedAt: row.generatedAt,
    dataAsOf: row.dataAsOf,
    rows: JSON.parse(row.body) as FleetRow[],
    stale,
    staleReason: stale ? `snapshot is ${Math.floor(age / 1_000_000)} s old; a refresh is running` : null,
  }
}

/** The `fleet.snapshot` job: refreshes every tenant that has servers or a snapshot. */
export function refreshAllSnapshots(deps: Deps): string {
  const tenants = deps.db
    .selectDistinct({ tenantId: servers.tenantId })
    .from(servers)
    .where(isNull(servers.decommissionedAt))
    .all()
    .map((r) => r.tenantId)
  const withSnapshots = deps.db
    .select({ tenantId: fleetSnapshots.tenantId })
    .from(fleetSnapshots)
    .all()
    .map((r) => r.tenantId)
  const all = [...new Set([...tenants, ...withSnapshots])]
  for (const t of all) refreshSnapshot(deps, t)
  return `refreshed ${all.length} fleet snapshots`
}

export function envelope(s: Snapshot) {
  return {
    generated_at: formatTimestamp(s.generatedAt),
    data_as_of: formatTimestamp(s.dataAsOf),
    version: SNAPSHOT_SHAPE_VERSION,
    stale: s.stale,
    stale_reason: s.staleReason,
  }
}

/** A strong tag over the snapshot and whatever selects from it (query, allowlist). */
export function snapshotTag(s: Snapshot, selector: string): string {
  return `"${createHash('sha256').update(`${SNAPSHOT_SHAPE_VERSION}|${s.generatedAt}|${s.stale}|${selector}`).digest('base64url').slice(0, 27)}"`
}
