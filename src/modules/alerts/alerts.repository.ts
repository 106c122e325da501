import { and, desc, eq, gte, inArray, isNull, lt, lte, or, sql, type SQL } from 'drizzle-orm'
import { alertIncidents } from '../../../db/schema/alerts'
import { rawSql, type DbOrTx } from '../../../db/client'

export type IncidentRow = typeof alertIncidents.$inferSelect

export async function findIncident(db: DbOrTx, tenantId: string, id: string): Promise<IncidentRow | undefined> {
  return await db
    .select()
    .from(alertIncidents)
    .where(and(eq(alertIncidents.tenantId, tenantId), eq(alertIncidents.id, id)))
    .get()
}

/**
 * `state <> 'resolved'` written out, not bound: SQLite uses a partial index only for a WHERE term that
 * matches the index's own, and the open-cause index holds exactly the unresolved incidents.
 */
const UNRESOLVED = sql`${alertIncidents.state} <> 'resolved'`

/** The cause's unresolved incident, if any (the partial unique index allows one). */
export async function findUnresolved(db: DbOrTx, tenantId: string, causeKey: string): Promise<IncidentRow | undefined> {
  return await db
    .select()
    .from(alertIncidents)
    .where(and(eq(alertIncidents.tenantId, tenantId), eq(alertIncidents.causeKey, causeKey), UNRESOLVED))
    .get()
}

/** Cause keys or ids per statement of the batch reads and writes (well under both databases' parameter limits). */
const PER_STATEMENT = 500

/** The tenant's unresolved incidents of the causes among `causeKeys` (at most one each). */
export async function findUnresolvedOfKeys(db: DbOrTx, tenantId: string, causeKeys: readonly string[]): Promise<IncidentRow[]> {
  const out: IncidentRow[] = []
  for (let i = 0; i < causeKeys.length; i += PER_STATEMENT)
    out.push(
      ...(await db
        .select()
        .from(alertIncidents)
        .where(and(eq(alertIncidents.tenantId, tenantId), inArray(alertIncidents.causeKey, causeKeys.slice(i, i + PER_STATEMENT)), UNRESOLVED))
        .all()),
    )
  return out
}

/** The same change to several incidents, a multi-row statement per PER_STATEMENT of them. */
export async function updateIncidents(tx: DbOrTx, ids: readonly string[], patch: Partial<Omit<IncidentRow, 'id' | 'tenantId'>>): Promise<void> {
  for (let i = 0; i < ids.length; i += PER_STATEMENT)
    await tx
      .update(alertIncidents)
      .set(patch)
      .where(inArray(alertIncidents.id, ids.slice(i, i + PER_STATEMENT)))
      .run()
}

/** Every unresolved incident of every tenant (the alerts.evaluate job), read from the partial index. */
export async function unresolvedIncidents(db: DbOrTx): Promise<IncidentRow[]> {
  return await db.select().from(alertIncidents).where(UNRESOLVED).orderBy(alertIncidents.tenantId, alertIncidents.causeKey).all()
}

/** The tenant's unresolved incidents on servers, counted per server and severity (a fleet row's health). */
export async function unresolvedCountsByServer(db: DbOrTx, tenantId: string): Promise<{ serverId: string; severity: IncidentRow['severity']; n: number }[]> {
  const rows = await db
    .select({ serverId: sql<string>`${alertIncidents.serverId}`, severity: alertIncidents.severity, n: sql<number>`count(*)` })
    .from(alertIncidents)
    .where(and(eq(alertIncidents.tenantId, tenantId), sql`${alertIncidents.serverId} is not null`, UNRESOLVED))
    .groupBy(alertIncidents.serverId, alertIncidents.severity)
    .all()
  return rows.map((r) => ({ ...r, n: Number(r.n) }))
}

export async function unresolvedOfServer(db: DbOrTx, tenantId: string, serverId: string): Promise<IncidentRow[]> {
  return await db
    .select()
    .from(alertIncidents)
    .where(and(eq(alertIncidents.tenantId, tenantId), eq(alertIncidents.serverId, serverId), UNRESOLVED))
    .all()
}

/** When the cause's latest incident resolved at or before `atUs` was resolved (null when none was). */
export async function lastResolvedAt(db: DbOrTx, tenantId: string, causeKey: string, atUs: number): Promise<number | null> {
  const r = await db
    .select({ at: sql<number | null>`max(${alertIncidents.resolvedAt})` })
    .from(alertIncidents)
    .where(and(eq(alertIncidents.tenantId, tenantId), eq(alertIncidents.causeKey, causeKey), lte(alertIncidents.resolvedAt, atUs)))
    .get()
  return r?.at ?? null
}

/** Per cause among `causeKeys`, lastResolvedAt's answer, in one read per PER_STATEMENT of them (causes never resolved are absent). */
export async function lastResolvedAtOfKeys(db: DbOrTx, tenantId: string, causeKeys: readonly string[], atUs: number): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  for (let i = 0; i < causeKeys.length; i += PER_STATEMENT)
    for (const r of await db
      .select({ key: alertIncidents.causeKey, at: sql<number>`max(${alertIncidents.resolvedAt})` })
      .from(alertIncidents)
      .where(
        and(
          eq(alertIncidents.tenantId, tenantId),
          inArray(alertIncidents.causeKey, causeKeys.slice(i, i + PER_STATEMENT)),
          lte(alertIncidents.resolvedAt, atUs),
        ),
      )
      .groupBy(alertIncidents.causeKey)
      .all())
      if (r.at !== null) out.set(r.key, Number(r.at))
  return out
}

/** Rows per multi-row INSERT of insertIncidents (19 values each): a handful of statement shapes, each compiled once. */
const INCIDENT_ROWS_PER_INSERT = [256, 64, 16, 4, 1]
const INCIDENT_COLUMNS =
  'id, tenant_id, kind, cause_key, severity, server_id, marketplace, title, detail, state, opened_at, last_seen_at, occurrences, acknowledged_at, acknowledged_by, resolved_at, resolved_by, resolution, notification_ids'

/** Several incidents, as insertIncident one after the other, written out in a few multi-row statements. */
export async function insertIncidents(tx: DbOrTx, rows: readonly IncidentRow[]): Promise<void> {
  for (let i = 0; i < rows.length; ) {
    const size = INCIDENT_ROWS_PER_INSERT.find((n) => n <= rows.length - i)!
    const params: unknown[] = []
    const tuples: string[] = []
    for (const r of rows.slice(i, i + size)) {
      const n = params.length
      params.push(
        r.id,
        r.tenantId,
        r.kind,
        r.causeKey,
        r.severity,
        r.serverId,
        r.marketplace,
        r.title,
        r.detail,
        r.state,
        r.openedAt,
        r.lastSeenAt,
        r.occurrences,
        r.acknowledgedAt,
        r.acknowledgedBy,
        r.resolvedAt,
        r.resolvedBy,
        r.resolution,
        JSON.stringify(r.notificationIds),
      )
      tuples.push(`(${Array.from({ length: 19 }, (_, k) => `$${n + k + 1}`).join(', ')})`)
    }
    await rawSql(tx).run(`INSERT INTO alert_incidents (${INCIDENT_COLUMNS}) VALUES ${tuples.join(', ')}`, ...params)
    i += size
  }
}

export async function insertIncident(tx: DbOrTx, row: IncidentRow): Promise<void> {
  await tx.insert(alertIncidents).values(row).run()
}

export async function updateIncident(tx: DbOrTx, id: string, patch: Partial<Omit<IncidentRow, 'id' | 'tenantId'>>): Promise<void> {
  await tx.update(alertIncidents).set(patch).where(eq(alertIncidents.id, id)).run()
}

export type IncidentFilter = {
  state?: 'open' | 'acknowledged' | 'resolved' | 'unresolved'
  kind?: string
  severity?: string
  serverId?: string
  marketplace?: string
  fromUs?: number
  toUs?: number
  /** A token's server allowlist: incidents of other servers are left out (account-wide ones stay). */
  allowlist: readonly string[] | null
}

/** Newest first (ids are UUIDv7, so id order is opening order). */
export async function listIncidents(db: DbOrTx, tenantId: string, f: IncidentFilter, beforeId: string | undefined, limit: number): Promise<IncidentRow[]> {
  const where: SQL[] = [eq(alertIncidents.tenantId, tenantId)]
  if (f.state === 'unresolved') where.push(UNRESOLVED)
  else if (f.state) where.push(eq(alertIncidents.state, f.state))
  if (f.kind) where.push(eq(alertIncidents.kind, f.kind))
  if (f.severity) where.push(eq(alertIncidents.severity, f.severity as IncidentRow['severity']))
  if (f.serverId) where.push(eq(alertIncidents.serverId, f.serverId))
  if (f.marketplace) where.push(eq(alertIncidents.marketplace, f.marketplace))
  if (f.fromUs !== undefined) where.push(gte(alertIncidents.openedAt, f.fromUs))
  if (f.toUs !== undefined) where.push(lt(alertIncidents.openedAt, f.toUs))
  if (f.allowlist)
    where.push(f.allowlist.length ? or(isNull(alertIncidents.serverId), inArray(alertIncidents.serverId, [...f.allowlist]))! : isNull(alertIncidents.serverId))
  if (beforeId) where.push(lt(alertIncidents.id, beforeId))
  return await db
    .select()
    .from(alertIncidents)
    .where(and(...where))
    .orderBy(desc(alertIncidents.id))
    .limit(limit)
    .all()
}
