import { and, asc, eq, sql } from 'drizzle-orm'
import { serverGroups } from '../../../db/schema/groups'
import type { DbOrTx } from '../../../db/client'

export type GroupRow = typeof serverGroups.$inferSelect

/** A group of the tenant, or undefined. */
export async function findGroup(db: DbOrTx, tenantId: string, id: string): Promise<GroupRow | undefined> {
  return await db
    .select()
    .from(serverGroups)
    .where(and(eq(serverGroups.tenantId, tenantId), eq(serverGroups.id, id)))
    .get()
}

export async function findGroupByName(db: DbOrTx, tenantId: string, name: string): Promise<GroupRow | undefined> {
  return await db
    .select()
    .from(serverGroups)
    .where(and(eq(serverGroups.tenantId, tenantId), eq(serverGroups.name, name)))
    .get()
}

/** The tenant's groups by position, then name. */
export async function groupsOf(db: DbOrTx, tenantId: string): Promise<GroupRow[]> {
  return await db.select().from(serverGroups).where(eq(serverGroups.tenantId, tenantId)).orderBy(asc(serverGroups.position), asc(serverGroups.name)).all()
}

/** The highest position in use (0 when the tenant has no group). */
export async function lastPosition(db: DbOrTx, tenantId: string): Promise<number> {
  const r = await db
    .select({ p: sql<number>`coalesce(max(${serverGroups.position}), 0)` })
    .from(serverGroups)
    .where(eq(serverGroups.tenantId, tenantId))
    .get()
  return Number(r?.p ?? 0)
}

export async function insertGroup(tx: DbOrTx, row: GroupRow): Promise<void> {
  await tx.insert(serverGroups).values(row).run()
}

export async function updateGroup(tx: DbOrTx, id: string, patch: Pick<GroupRow, 'name' | 'position' | 'version'>): Promise<void> {
  await tx.update(serverGroups).set(patch).where(eq(serverGroups.id, id)).run()
}

export async function deleteGroupRow(tx: DbOrTx, id: string): Promise<void> {
  await tx.delete(serverGroups).where(eq(serverGroups.id, id)).run()
}
