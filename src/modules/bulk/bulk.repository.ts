import { and, asc, desc, eq, inArray, lt, sql } from 'drizzle-orm'
import type { DbOrTx } from '../../../db/client'
import { bulkItems, bulkOperations } from '../../../db/schema/bulk'

export type OperationRow = typeof bulkOperations.$inferSelect
export type ItemRow = typeof bulkItems.$inferSelect
export type ItemState = ItemRow['state']

export async function findOperation(db: DbOrTx, tenantId: string, id: string): Promise<OperationRow | undefined> {
  return await db
    .select()
    .from(bulkOperations)
    .where(and(eq(bulkOperations.tenantId, tenantId), eq(bulkOperations.id, id)))
    .get()
}

/** The tenant's operations, newest first, before `beforeId` (ids are UUIDv7: time-ordered). */
export async function operationsOf(db: DbOrTx, tenantId: string, beforeId: string | undefined, take: number): Promise<OperationRow[]> {
  return await db
    .select()
    .from(bulkOperations)
    .where(and(eq(bulkOperations.tenantId, tenantId), beforeId === undefined ? undefined : lt(bulkOperations.id, beforeId)))
    .orderBy(desc(bulkOperations.id))
    .limit(take)
    .all()
}

export async function insertOperation(tx: DbOrTx, row: OperationRow, items: ItemRow[]): Promise<void> {
  await tx.insert(bulkOperations).values(row).run()
  for (let i = 0; i < items.length; i += 100)
    await tx
      .insert(bulkItems)
      .values(items.slice(i, i + 100))
      .run()
}

export async function updateOperation(tx: DbOrTx, id: string, patch: Partial<OperationRow>): Promise<void> {
  await tx.update(bulkOperations).set(patch).where(eq(bulkOperations.id, id)).run()
}

/** An operation's items in their order. */
export async function itemsOf(db: DbOrTx, tenantId: string, operationId: string): Promise<ItemRow[]> {
  return await db
    .select()
    .from(bulkItems)
    .where(and(eq(bulkItems.tenantId, tenantId), eq(bulkItems.operationId, operationId)))
    .orderBy(asc(bulkItems.position))
    .all()
}

/** How many items of each state the operations have. */
export async function countsOf(db: DbOrTx, tenantId: string, operationIds: string[]): Promise<Map<string, Partial<Record<ItemState, number>>>> {
  const out = new Map<string, Partial<Record<ItemState, number>>>()
  if (!operationIds.length) return out
  const rows = await db
    .select({ op: bulkItems.operationId, state: bulkItems.state, n: sql<number>`count(*)` })
    .from(bulkItems)
    .where(and(eq(bulkItems.tenantId, tenantId), inArray(bulkItems.operationId, operationIds)))
    .groupBy(bulkItems.operationId, bulkItems.state)
    .all()
  for (const r of rows) out.set(r.op, { ...(out.get(r.op) ?? {}), [r.state]: Number(r.n) })
  return out
}

/** The next item to send of an operation: one left `sending` by a run that stopped first, else the first pending. */
export async function nextItem(db: DbOrTx, tenantId: string, operationId: string): Promise<ItemRow | undefined> {
  return await db
    .select()
    .from(bulkItems)
    .where(and(eq(bulkItems.tenantId, tenantId), eq(bulkItems.operationId, operationId), inArray(bulkItems.state, ['sending', 'pending'])))
    .orderBy(asc(bulkItems.position))
    .limit(1)
    .get()
}

export async function updateItem(tx: DbOrTx, id: string, patch: Partial<ItemRow>): Promise<void> {
  await tx.update(bulkItems).set(patch).where(eq(bulkItems.id, id)).run()
}

/** Cancels an operation's items that were not sent yet. */
export async function cancelPending(tx: DbOrTx, tenantId: string, operationId: string, nowUs: number, reason: string): Promise<void> {
  await tx
    .update(bulkItems)
    .set({ state: 'cancelled', reason, after: null, updatedAt: nowUs, finishedAt: nowUs })
    .where(and(eq(bulkItems.tenantId, tenantId), eq(bulkItems.operationId, operationId), eq(bulkItems.state, 'pending')))
    .run()
}

/** The tenants with items still to send, and their operations oldest first (the bulk.run job). */
export async function unfinishedOperations(db: DbOrTx): Promise<{ tenantId: string; operationId: string }[]> {
  return await db
    .selectDistinct({ tenantId: bulkItems.tenantId, operationId: bulkItems.operationId })
    .from(bulkItems)
    .where(inArray(bulkItems.state, ['sending', 'pending']))
    .orderBy(asc(bulkItems.tenantId), asc(bulkItems.operationId))
    .all()
}
