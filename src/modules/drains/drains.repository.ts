import { and, asc, desc, eq, inArray, isNotNull, lt, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../../../db/client'
import { drains } from '../../../db/schema/drains'

export type DrainRow = typeof drains.$inferSelect
export type { DrainLink, DrainState } from '../../../db/schema/drains'

export async function findDrain(db: DbOrTx, tenantId: string, id: string): Promise<DrainRow | undefined> {
  return await db
    .select()
    .from(drains)
    .where(and(eq(drains.tenantId, tenantId), eq(drains.id, id)))
    .get()
}

/** The server's drain that has not finished, if any. */
export async function liveDrainOf(db: DbOrTx, tenantId: string, serverId: string): Promise<DrainRow | undefined> {
  return await db
    .select()
    .from(drains)
    .where(and(eq(drains.tenantId, tenantId), eq(drains.liveServerId, serverId)))
    .get()
}

export async function insertDrain(tx: DbOrTx, row: DrainRow): Promise<void> {
  await tx.insert(drains).values(row).run()
}

/**
 * Writes `patch` when the drain is still at `version` (a compare-and-set: a cancel and the job never
 * both move it). Answers whether it was written.
 */
export async function moveDrain(tx: DbOrTx, row: DrainRow, patch: Partial<DrainRow>): Promise<DrainRow | null> {
  const next = { ...row, ...patch, version: row.version + 1 }
  const done = await tx
    .update(drains)
    .set({ ...patch, version: next.version })
    .where(and(eq(drains.id, row.id), eq(drains.version, row.version)))
    .returning({ id: drains.id })
    .all()
  return done.length ? next : null
}

export type DrainFilter = { serverId?: string; state?: DrainRow['state']; live?: boolean; serverIds?: readonly string[] | null }

/** The tenant's drains, newest first, before `beforeId` (ids are UUIDv7: time-ordered). */
export async function listDrainRows(db: DbOrTx, tenantId: string, f: DrainFilter, beforeId: string | null, limit: number): Promise<DrainRow[]> {
  const where: SQL[] = [eq(drains.tenantId, tenantId)]
  if (f.serverId) where.push(eq(drains.serverId, f.serverId))
  if (f.state) where.push(eq(drains.state, f.state))
  if (f.live === true) where.push(isNotNull(drains.liveServerId))
  if (f.serverIds) where.push(inArray(drains.serverId, [...f.serverIds]))
  if (beforeId) where.push(lt(drains.id, beforeId))
  return await db
    .select()
    .from(drains)
    .where(and(...where))
    .orderBy(desc(drains.id))
    .limit(limit)
    .all()
}

/** The server's drain not finished, whatever its tenant (an id from an event only). */
export async function liveDrainOfServer(db: DbOrTx, serverId: string): Promise<DrainRow | undefined> {
  return await db.select().from(drains).where(eq(drains.liveServerId, serverId)).get()
}

/** Every drain not finished, of every tenant, oldest first (the drains.advance job). */
export async function liveDrains(db: DbOrTx): Promise<DrainRow[]> {
  return await db.select().from(drains).where(isNotNull(drains.liveServerId)).orderBy(asc(drains.tenantId), asc(drains.createdAt)).all()
}
