import { and, asc, eq, sql } from 'drizzle-orm'
import { serverGroups } from '../../../db/schema/groups'
import type { DbOrTx } from '../../../db/client'

export type GroupRow = typeof serverGroups.$inferSelect

/** A group of the tenant, or undefined. */
export function findGroup(db: DbOrTx, tenantId: string, id: string): GroupRow | undefined {
  return db
    .select()
    .from(serverGroups)
    .where(and(eq(serverGroups.tenantId, tenantId), eq(serverGroups.id, id)))
    .get()
}

export function findGroupByName(db: DbOrTx, tenantId: string, name: string): GroupRow | undefined {
  return db
    .select()
    .from(serverGroups)
    .where(and(eq(serverGroups.tenantId, tenantId), eq(serverGroups.name, name)))
    .get()
}

/** The tenant's groups by position, then name. */
export function groupsOf(db: DbOrTx, tenantId: string): GroupRow[] {
  return db.select().from(serverGroups).where(eq(serverGroups.tenantId, tenantId)).orderBy(asc(serverGroups.position), asc(serverGroups.name)).all()
}

/** The highest position in use (0 when the tenant has no group). */
export function lastPosition(db: DbOrTx, tenantId: string): number {
  const r = db
    .select({ p: sql<number>`coalesce(max(${serverGroups.position}), 0)` })
    .from(serverGroups)
    .where(eq(serverGroups.tenantId, tenantId))
    .get()
  return Number(r?.p ?? 0)
}

export function insertGroup(tx: DbOrTx, row: GroupRow): void {
  tx.insert(serverGroups).values(row).run()
}

export function updateGroup(tx: DbOrTx, id: string, patch: Pick<GroupRow, 'name' | 'position' | 'version'>): void {
  tx.update(serverGroups).set(patch).where(eq(serverGroups.id, id)).run()
}

export function deleteGroupRow(tx: DbOrTx, id: string): void {
  tx.delete(serverGroups).where(eq(serverGroups.id, id)).run()
}
