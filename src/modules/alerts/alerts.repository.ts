import { and, desc, eq, gte, inArray, isNull, lt, lte, or, sql, type SQL } from 'drizzle-orm'
import { alertIncidents } from '../../../db/schema/alerts'
import type { DbOrTx } from '../../../db/client'

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
