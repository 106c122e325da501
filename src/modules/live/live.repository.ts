import { and, asc, eq, gt } from 'drizzle-orm'
import { liveEventHorizons, liveEventSequences, liveEvents } from '../../../db/schema/live'
import { commitInOrder, isPostgres, rawSql, type DbOrTx } from '../../../db/client'

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
  // Texts SQLite keeps compiled (each alert incident and command change writes one).
  const [[seq]] = await rawSql(tx).values<[number]>(
    `INSERT INTO live_event_sequences (tenant_id, last_seq) VALUES ($1, 1)
     ON CONFLICT (tenant_id) DO UPDATE SET last_seq = live_event_sequences.last_seq + 1 RETURNING last_seq`,
    row.tenantId,
  )
  // The columns named, not Drizzle's insert: for a missing key that writes NULL, which SQLite
  // turns into the next id and PostgreSQL refuses (its bigserial wants the column left out).
  await rawSql(tx).run(
    'INSERT INTO live_events (tenant_id, seq, server_id, type, payload, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
    row.tenantId,
    Number(seq),
    row.serverId,
    row.type,
    row.payload,
    row.createdAt,
  )
  return Number(seq)
}

/**
 * Rows per multi-row INSERT of insertLiveEvents (6 values each: well under both databases'
 * parameter limits): the largest of these that fit, so the statements have a handful of shapes,
 * each compiled once, not one per count.
 */
const ROWS_PER_INSERT = [256, 64, 16, 4, 1]

/**
 * Appends several events of one tenant, in the order given, as insertLiveEvent would one after the
 * other: the tenant's sequence moves on by their count in one statement, and they are written with
 * consecutive ids in multi-row statements.
 */
export async function insertLiveEvents(tx: DbOrTx, tenantId: string, rows: Omit<LiveEventRow, 'id' | 'seq' | 'tenantId'>[]): Promise<void> {
  if (rows.length === 0) return
  await commitInOrder(tx, 'live_events')
  const [[last]] = await rawSql(tx).values<[number]>(
    `INSERT INTO live_event_sequences (tenant_id, last_seq) VALUES ($1, $2)
     ON CONFLICT (tenant_id) DO UPDATE SET last_seq = live_event_sequences.last_seq + $2 RETURNING last_seq`,
    tenantId,
    rows.length,
  )
  const first = Number(last) - rows.length + 1
  for (let i = 0; i < rows.length; ) {
    const size = ROWS_PER_INSERT.find((n) => n <= rows.length - i)!
    const slice = rows.slice(i, i + size)
    const params: unknown[] = []
    const tuples = slice.map((r, k) => {
      const n = params.length
      params.push(tenantId, first + i + k, r.serverId, r.type, r.payload, r.createdAt)
      return `($${n + 1}, $${n + 2}, $${n + 3}, $${n + 4}, $${n + 5}, $${n + 6})`
    })
    await rawSql(tx).run(`INSERT INTO live_events (tenant_id, seq, server_id, type, payload, created_at) VALUES ${tuples.join(', ')}`, ...params)
    i += size
  }
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
export async function lastIssuedId(db: DbOrTx): Promise<number> {
  // PostgreSQL has no sqlite_sequence: the newest event, or the newest one the prune removed.
  const rows = isPostgres(db)
    ? await rawSql(db).objects<{ seq: number }>(
        'SELECT greatest(coalesce((SELECT max(id) FROM live_events), 0), coalesce((SELECT max(pruned_through) FROM live_event_horizons), 0)) AS seq',
      )
    : await rawSql(db).objects<{ seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'live_events'")
  return rows[0]?.seq ?? 0
}

/** The highest event id (`seq`) of the tenant's events the prune removed (0 when none was). */
export async function horizonOf(db: DbOrTx, tenantId: string): Promise<number> {
  return (await db.select().from(liveEventHorizons).where(eq(liveEventHorizons.tenantId, tenantId)).get())?.prunedThrough ?? 0
}

/** Per tenant, the newest buffer id written after `afterId` (by any process): which tenants' streams have news. */
export async function newestByTenant(db: DbOrTx, afterId: number): Promise<{ tenantId: string; id: number }[]> {
  return await rawSql(db).objects<{ tenantId: string; id: number }>(
    'SELECT tenant_id AS "tenantId", max(id) AS id FROM live_events WHERE id > $1 GROUP BY tenant_id',
    afterId,
  )
}

/**
 * Deletes one slice of events chosen by `where` (a condition on live_events, its parameters from $1
 * on), at most `limit`, raising each tenant's horizon to the highest event id (`seq`) deleted: two
 * statements over the same ordered slice, in the caller's transaction. Answers how many were deleted.
 */
async function deleteSlice(db: DbOrTx, where: string, limit: number, ...params: (string | number)[]): Promise<number> {
  // Within a tenant, buffer order and seq order are the same (both given in commit order). The
  // slice's placeholders: the condition's ($1 on), then the limit.
  const slice = `SELECT id, tenant_id, seq FROM live_events WHERE ${where} ORDER BY id LIMIT $${params.length + 1}`
  const greatest = isPostgres(db) ? 'greatest' : 'max'
  await rawSql(db).run(
    `INSERT INTO live_event_horizons (tenant_id, pruned_through) SELECT tenant_id, max(seq) FROM (${slice}) AS s WHERE true GROUP BY tenant_id
     ON CONFLICT (tenant_id) DO UPDATE SET pruned_through = ${greatest}(live_event_horizons.pruned_through, excluded.pruned_through)`,
    ...params,
    limit,
  )
  return (await rawSql(db).run(`DELETE FROM live_events WHERE id IN (SELECT id FROM (${slice}) AS s)`, ...params, limit)).changes
}

/** Deletes at most `limit` events written before `beforeUs`, oldest first. */
export async function pruneBefore(db: DbOrTx, beforeUs: number, limit: number): Promise<number> {
  return await deleteSlice(db, 'created_at < $1', limit, beforeUs)
}

/** Tenants holding more than `cap` events, with the event id (`seq`) of their newest event past the cap (it and everything older go). */
export async function overCap(db: DbOrTx, cap: number): Promise<{ tenantId: string; throughSeq: number }[]> {
  const over = await rawSql(db).objects<{ tenantId: string }>('SELECT tenant_id AS "tenantId" FROM live_events GROUP BY tenant_id HAVING count(*) > $1', cap)
  const out: { tenantId: string; throughSeq: number }[] = []
  for (const { tenantId } of over) {
    const [row] = await rawSql(db).objects<{ seq: number }>(
      'SELECT seq FROM live_events WHERE tenant_id = $1 ORDER BY seq DESC LIMIT 1 OFFSET $2',
      tenantId,
      cap,
    )
    out.push({ tenantId, throughSeq: row!.seq })
  }
  return out
}

/** Deletes at most `limit` of the tenant's events up to event id `throughSeq`, oldest first. */
export async function pruneTenantThrough(db: DbOrTx, tenantId: string, throughSeq: number, limit: number): Promise<number> {
  return await deleteSlice(db, 'tenant_id = $1 AND seq <= $2', limit, tenantId, throughSeq)
}
