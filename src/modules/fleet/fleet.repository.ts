import type { Database } from 'bun:sqlite'
import { and, asc, eq, inArray, isNull } from 'drizzle-orm'
import { fleetSnapshots, serverEvents, serverKeepOn, serverLatestMetrics, servers } from '../../../db/schema'
import type { DbOrTx } from '../../../db/client'

export type ServerRow = typeof servers.$inferSelect
export type ServerEventRow = typeof serverEvents.$inferSelect

/** A server of this tenant (decommissioned ones included: they keep their history). */
export function findServer(db: DbOrTx, tenantId: string, id: string): ServerRow | undefined {
  return db
    .select()
    .from(servers)
    .where(and(eq(servers.tenantId, tenantId), eq(servers.id, id)))
    .get()
}

export function findServerById(db: DbOrTx, id: string): ServerRow | undefined {
  return db.select().from(servers).where(eq(servers.id, id)).get()
}

export function findServerByAgentToken(db: DbOrTx, tokenHash: string): ServerRow | undefined {
  return db
    .select()
    .from(servers)
    .where(and(eq(servers.agentTokenHash, tokenHash), isNull(servers.decommissionedAt)))
    .get()
}

export function findServerByFingerprint(db: DbOrTx, tenantId: string, fingerprint: string): ServerRow | undefined {
  return db
    .select()
    .from(servers)
    .where(and(eq(servers.tenantId, tenantId), eq(servers.fingerprint, fingerprint), isNull(servers.decommissionedAt)))
    .get()
}

export function managedServers(db: DbOrTx, tenantId: string): ServerRow[] {
  return db
    .select()
    .from(servers)
    .where(and(eq(servers.tenantId, tenantId), isNull(servers.decommissionedAt)))
    .orderBy(asc(servers.name), asc(servers.id))
    .all()
}

export function insertServer(tx: DbOrTx, row: typeof servers.$inferInsert): void {
  tx.insert(servers).values(row).run()
}

export function updateServer(tx: DbOrTx, id: string, patch: Partial<ServerRow>): void {
  tx.update(servers).set(patch).where(eq(servers.id, id)).run()
}

export function insertServerEvent(tx: DbOrTx, row: ServerEventRow): void {
  tx.insert(serverEvents).values(row).run()
}

export function keepOnOf(db: DbOrTx, serverId: string): ('marketplace_a' | 'marketplace_b')[] {
  return db
    .select()
    .from(serverKeepOn)
    .where(eq(serverKeepOn.serverId, serverId))
    .orderBy(asc(serverKeepOn.marketplace))
    .all()
    .map((r) => r.marketplace)
}

export function latestMetricsOf(db: DbOrTx, serverIds: string[]) {
  const out: (typeof serverLatestMetrics.$inferSelect)[] = []
  // In slices: SQLite takes at most 32,766 parameters in one statement.
  for (let i = 0; i < serverIds.length; i += 5000)
    out.push(
      ...db
        .select()
        .from(serverLatestMetrics)
        .where(inArray(serverLatestMetrics.serverId, serverIds.slice(i, i + 5000)))
        .all(),
    )
  return out
}

/** Runs once per series per flush: a statement prepared once, as insertSamples (telemetry/ingest.ts) explains. */
export function upsertLatestMetric(sqlite: Database, row: typeof serverLatestMetrics.$inferSelect): void {
  sqlite
    .query(
      `INSERT INTO server_latest_metrics (server_id, gpu_index, metric, value, t) VALUES (?1, ?2, ?3, ?4, ?5)
       ON CONFLICT (server_id, gpu_index, metric) DO UPDATE SET value = excluded.value, t = excluded.t
       WHERE excluded.t >= server_latest_metrics.t`, // an older sample never replaces a newer one
    )
    .run(row.serverId, row.gpuIndex, row.metric, row.value, row.t)
}

/**
 * Marks the tenant's fleet snapshot out of date; the next read recomputes it. Only a clean row is
 * written: SQLite rewrites the whole row (the snapshot body, megabytes for a large fleet) on any
 * UPDATE, so setting the flag again on every presence transition would cost that much each time.
 */
export function markFleetDirty(tx: DbOrTx, tenantId: string): void {
  tx.update(fleetSnapshots)
    .set({ dirty: true })
    .where(and(eq(fleetSnapshots.tenantId, tenantId), eq(fleetSnapshots.dirty, false)))
    .run()
}
