import { createHash } from 'node:crypto'
import { afterCommit, withTransaction, type DbOrTx } from '../../../db/client'
import { perDeps, type Deps } from '../../platform/context'
import { TenantWalk } from '../../platform/jobs'
import { rideOnCount, rodeFor } from '../../platform/rate-limit'
import { formatTimestamp } from '../../platform/time'
import {
  findSnapshotBody,
  findSnapshotHead,
  SNAPSHOT_HEAD_RIDER,
  snapshotHeadOf,
  type SnapshotHead,
  latestMetricsOf,
  managedServers,
  markSnapshotDirty,
  saveSnapshot,
  snapshotTenants,
} from './fleet.repository'
import { factsOf, fleetRow, type FleetRow, type LatestByGpu } from './fleet.row'
import { rowFactsOf } from './row-facts'

/**
 * The fleet snapshot behind GET /servers and GET /dashboard: every managed server's row, computed
 * in one read and kept per tenant. It is refreshed every 60 s by `fleet.snapshot`; a write through
 * the API, a presence transition, a link's listing, price or rental read by the sync, an accrual
 * sample that earned money, or an alert incident opening or resolving marks it out of date so the
 * next read recomputes it. A read of a
 * snapshot older than 60 s is served at once with `stale: true` while a refresh runs
 * (stale-while-revalidate).
 */
const SNAPSHOT_TTL_US = 60_000_000
const SNAPSHOT_SHAPE_VERSION = 1

/**
 * The tenant's fleet snapshot is out of date (a figure of its rows moved): the next read recomputes
 * it. In the caller's transaction; what other modules call when their part of a row changes.
 */
export async function markFleetDirty(tx: DbOrTx, tenantId: string): Promise<void> {
  await markSnapshotDirty(tx, tenantId)
}

export type Snapshot = { generatedAt: number; dataAsOf: number; rows: FleetRow[]; stale: boolean; staleReason: string | null }

async function compute(deps: Deps, db: DbOrTx, tenantId: string, nowUs: number): Promise<FleetRow[]> {
  const list = await managedServers(db, tenantId)
  const byServer = new Map<string, LatestByGpu>()
  for (const m of await latestMetricsOf(
    db,
    list.map((s) => s.id),
  )) {
    let gpus = byServer.get(m.serverId)
    if (!gpus) byServer.set(m.serverId, (gpus = new Map()))
    let metrics = gpus.get(m.gpuIndex)
    if (!metrics) gpus.set(m.gpuIndex, (metrics = new Map()))
    metrics.set(m.metric, m.value)
  }
  const facts = await rowFactsOf(deps, db, tenantId, nowUs)
  return list.map((s) => fleetRow(s, byServer.get(s.id) ?? new Map(), factsOf(facts, s.id)))
}

/**
 * The parsed rows of recent snapshots, by tenant, with the generation they belong to: a read whose
 * stored snapshot has that generation uses them instead of reading and parsing the body again (a
 * fleet of 50 servers is 40 KB of JSON). At most PARSED_KEPT tenants, the least recently read
 * dropped first.
 */
const PARSED_KEPT = 256
const parsed = perDeps(() => new Map<string, { generatedAt: number; rows: FleetRow[] }>())

function remember(deps: Deps, tenantId: string, generatedAt: number, rows: FleetRow[]): void {
  const kept = parsed(deps)
  kept.delete(tenantId)
  kept.set(tenantId, { generatedAt, rows })
  if (kept.size > PARSED_KEPT) kept.delete(kept.keys().next().value!)
}

async function rowsOf(deps: Deps, tenantId: string, generatedAt: number): Promise<FleetRow[] | null> {
  const hit = parsed(deps).get(tenantId)
  if (hit && hit.generatedAt === generatedAt) {
    remember(deps, tenantId, generatedAt, hit.rows)
    return hit.rows
  }
  const row = await findSnapshotBody<FleetRow>(deps.db, tenantId)
  if (!row || row.generatedAt !== generatedAt) return null // replaced by another process meanwhile
  remember(deps, tenantId, generatedAt, row.body)
  return row.body
}

/** Recomputes and stores the tenant's snapshot in one transaction (a consistent read). */
async function refreshSnapshot(deps: Deps, tenantId: string): Promise<Snapshot> {
  const snap = await withTransaction(deps.db, async (tx) => {
    const now = deps.clock.nowUs()
    const rows = await compute(deps, tx, tenantId, now)
    await saveSnapshot(tx, { tenantId, generatedAt: now, dataAsOf: now, body: rows })
    return { generatedAt: now, dataAsOf: now, rows, stale: false, staleReason: null }
  })
  remember(deps, tenantId, snap.generatedAt, snap.rows)
  return snap
}

/** Tenants whose stale snapshot this process is refreshing in the background. */
const refreshing = perDeps(() => new Set<string>())

/** The snapshot's head is sent with the count of every `GET route` (PostgreSQL: one round trip for both). */
export function snapshotHeadRidesOn(route: string): void {
  rideOnCount('GET', route, SNAPSHOT_HEAD_RIDER)
}

/** The snapshot head that rode on this request's count (null: no snapshot), undefined when none did. */
export function rodeSnapshotHead(request: Request, tenantId: string): SnapshotHead | null | undefined {
  const row = rodeFor(request, SNAPSHOT_HEAD_RIDER, tenantId)
  return row === undefined ? undefined : snapshotHeadOf(row)
}

/**
 * The tenant's snapshot as stored, or recomputed when it is out of date. `head` is the stored head
 * when the caller has it already (what rode on the request's count, SNAPSHOT_HEAD_RIDER; null: no
 * snapshot); undefined reads it.
 */
export async function readSnapshot(deps: Deps, tenantId: string, head?: SnapshotHead | null): Promise<Snapshot> {
  const row = head === undefined ? await findSnapshotHead(deps.db, tenantId) : head
  if (!row || row.dirty) return refreshSnapshot(deps, tenantId)
  const rows = await rowsOf(deps, tenantId, row.generatedAt)
  if (!rows) return refreshSnapshot(deps, tenantId)
  const age = deps.clock.nowUs() - row.generatedAt
  const stale = age > SNAPSHOT_TTL_US
  const running = refreshing(deps)
  if (stale && !running.has(tenantId)) {
    // Outside any transaction the reader may be in (a timer set inside one would run inside it).
    // Marked running when it starts: a reader's transaction that rolls back starts nothing, and
    // must not leave the tenant marked for ever.
    afterCommit(deps.db, () => {
      if (running.has(tenantId)) return
      running.add(tenantId)
      setTimeout(async () => {
        try {
          await refreshSnapshot(deps, tenantId)
        } catch (e) {
          deps.log.error('fleet snapshot refresh failed', { tenant_id: tenantId, error: e })
        } finally {
          running.delete(tenantId)
        }
      }, 0)
    })
  }
  return {
    generatedAt: row.generatedAt,
    dataAsOf: row.dataAsOf,
    rows,
    stale,
    staleReason: stale ? `snapshot is ${Math.floor(age / 1_000_000)} s old; a refresh is running` : null,
  }
}

/**
 * The `fleet.snapshot` job: refreshes every tenant that has servers or a snapshot, in id order, each
 * in its own transaction and its own part of the job's per-tenant error boundary (a tenant whose
 * rows cannot be computed keeps its last snapshot, is reported and waits out a backoff; the others
 * are refreshed), yielding between two so requests and agent sessions are served meanwhile.
 */
export async function refreshAllSnapshots(deps: Deps, tenants: TenantWalk = new TenantWalk(deps, 'fleet.snapshot')): Promise<string> {
  const all = (await snapshotTenants(deps.db)).sort()
  let refreshed = 0
  for (const t of all) {
    if ((await tenants.run(t, () => refreshSnapshot(deps, t))) !== undefined) refreshed++
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  return `refreshed ${refreshed} fleet snapshots`
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
