import type { Database } from 'bun:sqlite'
import { and, asc, eq, gt, sql } from 'drizzle-orm'
import { liveEventHorizons, liveEventSequences, liveEvents } from '../../../db/schema/live'
import { commitInOrder, isPostgres, type DbOrTx } from '../../../db/client'

export type LiveEventRow = typeof liveEvents.$inferSelect

/**
 * Appends an event in the caller's transaction, with the tenant's next event id (`seq`, from
 * live_event_sequences, whose row the transaction holds until it commits). Streams read the buffer
 * as "ids after the last I saw", so ids must become visible in order: on PostgreSQL the writers of
 * events take their turn until they commit (commitInOrder); SQLite's single writer gives that order
 * already. Answers the event's id as the tenant sees it.
 */
export async function insertLiveEvent(tx: DbOrTx, row: Omit<LiveEventRow, 'id' | 'seq'>): Promise<number> {
  await commitInOrder(tx, 'live_events')
  // A raw statement's row comes back as its values (Drizzle's bun-sqlite get()).
  const [seq] = tx.get<[number]>(
    sql`INSERT INTO live_event_sequences (tenant_id, last_seq) VALUES (${row.tenantId}, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET last_seq = live_event_sequences.last_seq + 1 RETURNING last_seq`,
  )
  // The columns named, not Drizzle's insert: for a missing key that writes NULL, which SQLite
  // turns into the next id and PostgreSQL refuses (its bigserial wants the column left out).
  tx.run(
    sql`INSERT INTO live_events (tenant_id, seq, server_id, type, payload, created_at) VALUES (${row.tenantId}, ${seq}, ${row.serverId}, ${row.type}, ${row.payload}, ${row.createdAt})`,
  )
  return Number(seq)
}

/** The tenant's events after its event id `afterSeq`, oldest first. */
export async function eventsAfter(db: DbOrTx, tenantId: string, afterSeq: number, limit: number): Promise<LiveEventRow[]> {
  return db
    .select()
    .from(liveEvents)
    .where(and(eq(liveEvents.tenantId, tenantId), gt(liveEvents.seq, afterSeq)))
    .orderBy(asc(liveEvents.seq))
    .limit(limit)
    .all()
}

/** The tenant's last event id handed out (0 before its first): pruning never lowers it. */
export async function lastSeqOf(db: DbOrTx, tenantId: string): Promise<number> {
  return (await db.select().from(liveEventSequences).where(eq(liveEventSequences.tenantId, tenantId)).get())?.lastSeq ?? 0
}

/**
 * The last buffer id handed out across tenants (0 before the first), for the hub's poll only (never
 * shown to a client): pruning never lowers it, AUTOINCREMENT never reuses one.
 */
export function lastIssuedId(sqlite: Database): number {
  // PostgreSQL has no sqlite_sequence: the newest event, or the newest one the prune removed.
  if (isPostgres(sqlite))
    return (
      sqlite
        .query<{ seq: number }, []>(
          'SELECT max(coalesce((SELECT max(id) FROM live_events), 0), coalesce((SELECT max(pruned_through) FROM live_event_horizons), 0)) AS seq',
        )
        .get()?.seq ?? 0
    )
  const row = sqlite.query<{ seq: number }, []>("SELECT seq FROM sqlite_sequence WHERE name = 'live_events'").get()
  return row?.seq ?? 0
}

/** The highest event id (`seq`) of the tenant's events the prune removed (0 when none was). */
export async function horizonOf(db: DbOrTx, tenantId: string): Promise<number> {
  return (await db.select().from(liveEventHorizons).where(eq(liveEventHorizons.tenantId, tenantId)).get())?.prunedThrough ?? 0
}

/** Per tenant, the newest buffer id written after `afterId` (by any process): which tenants' streams have news. */
export function newestByTenant(sqlite: Database, afterId: number): { tenantId: string; id: number }[] {
  return sqlite
    .query<{ tenantId: string; id: number }, [number]>('SELECT tenant_id AS "tenantId", max(id) AS id FROM live_events WHERE id > ?1 GROUP BY tenant_id')
    .all(afterId)
}

/**
 * Deletes one slice of events chosen by `where` (a condition on live_events, its parameters from ?2
 * on), at most `limit`, raising each tenant's horizon to the highest event id (`seq`) deleted: two
 * statements over the same ordered slice, in the caller's transaction. Answers how many were deleted.
 */
function deleteSlice(sqlite: Database, where: string, limit: number, ...params: (string | number)[]): number {
  // Within a tenant, buffer order and seq order are the same (both given in commit order).
  const slice = `SELECT id, tenant_id, seq FROM live_events WHERE ${where} ORDER BY id LIMIT ?1`
  sqlite
    .query(
      `INSERT INTO live_event_horizons (tenant_id, pruned_through) SELECT tenant_id, max(seq) FROM (${slice}) AS s WHERE true GROUP BY tenant_id
       ON CONFLICT (tenant_id) DO UPDATE SET pruned_through = max(live_event_horizons.pruned_through, excluded.pruned_through)`,
    )
    .run(limit, ...params)
  return sqlite.query(`DELETE FROM live_events WHERE id IN (SELECT id FROM (${slice}) AS s)`).run(limit, ...params).changes
}

/** Deletes at most `limit` events written before `beforeUs`, oldest first. */
export function pruneBefore(sqlite: Database, beforeUs: number, limit: number): number {
  return deleteSlice(sqlite, 'created_at < ?2', limit, beforeUs)
}

/** Tenants holding more than `cap` events, with the event id (`seq`) of their newest event past the cap (it and everything older go). */
export function overCap(sqlite: Database, cap: number): { tenantId: string; throughSeq: number }[] {
  const over = sqlite.query<{ tenantId: string }, [number]>('SELECT tenant_id AS "tenantId" FROM live_events GROUP BY tenant_id HAVING count(*) > ?1').all(cap)
  return over.map(({ tenantId }) => ({
    tenantId,
    throughSeq: sqlite
      .query<{ seq: number }, [string, number]>('SELECT seq FROM live_events WHERE tenant_id = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2')
      .get(tenantId, cap)!.seq,
  }))
}

/** Deletes at most `limit` of the tenant's events up to event id `throughSeq`, oldest first. */
export function pruneTenantThrough(sqlite: Database, tenantId: string, throughSeq: number, limit: number): number {
  return deleteSlice(sqlite, 'tenant_id = ?2 AND seq <= ?3', limit, tenantId, throughSeq)
}
