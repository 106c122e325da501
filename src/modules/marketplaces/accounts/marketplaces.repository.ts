import { and, asc, desc, eq, lt } from 'drizzle-orm'
import { marketplaceAccounts, marketplaceOperations } from '../../../../db/schema/marketplaces'
import { changesOf, type DbOrTx } from '../../../../db/client'
import type { MarketplaceId } from '../adapters/marketplaces.adapter'

export type AccountRow = typeof marketplaceAccounts.$inferSelect
export type OperationRow = typeof marketplaceOperations.$inferSelect

export async function findAccount(db: DbOrTx, tenantId: string, marketplace: MarketplaceId): Promise<AccountRow | undefined> {
  return db
    .select()
    .from(marketplaceAccounts)
    .where(and(eq(marketplaceAccounts.tenantId, tenantId), eq(marketplaceAccounts.marketplace, marketplace)))
    .get()
}

/** Every connected account of every tenant (a key marked invalid is not sent again), for the sync. */
export async function connectedAccounts(db: DbOrTx): Promise<AccountRow[]> {
  return db.select().from(marketplaceAccounts).where(eq(marketplaceAccounts.status, 'connected')).orderBy(asc(marketplaceAccounts.id)).all()
}

export async function updateAccount(tx: DbOrTx, id: string, patch: Partial<AccountRow>): Promise<void> {
  await tx.update(marketplaceAccounts).set(patch).where(eq(marketplaceAccounts.id, id)).run()
}

export async function accountsOf(db: DbOrTx, tenantId: string): Promise<AccountRow[]> {
  return db.select().from(marketplaceAccounts).where(eq(marketplaceAccounts.tenantId, tenantId)).orderBy(marketplaceAccounts.marketplace).all()
}

/** Inserts the tenant's account at a marketplace, or replaces its key and clears the last failure. */
export async function saveAccount(tx: DbOrTx, row: AccountRow): Promise<void> {
  const { id: _id, tenantId: _t, marketplace: _m, connectedAt: _c, ...replace } = row
  await tx
    .insert(marketplaceAccounts)
    .values(row)
    .onConflictDoUpdate({ target: [marketplaceAccounts.tenantId, marketplaceAccounts.marketplace], set: replace })
    .run()
}

export async function deleteAccount(tx: DbOrTx, tenantId: string, marketplace: MarketplaceId): Promise<number> {
  return changesOf(
    await tx
      .delete(marketplaceAccounts)
      .where(and(eq(marketplaceAccounts.tenantId, tenantId), eq(marketplaceAccounts.marketplace, marketplace)))
      .run(),
  )
}

export async function insertOperations(tx: DbOrTx, rows: OperationRow[]): Promise<void> {
  if (rows.length) await tx.insert(marketplaceOperations).values(rows).run()
}

/** Newest first; ids are time-ordered, so the id is the position. */
export async function operationsOf(db: DbOrTx, tenantId: string, filter: { serverId?: string; beforeId?: string }, take: number): Promise<OperationRow[]> {
  const where = [eq(marketplaceOperations.tenantId, tenantId)]
  if (filter.serverId) where.push(eq(marketplaceOperations.serverId, filter.serverId))
  if (filter.beforeId) where.push(lt(marketplaceOperations.id, filter.beforeId))
  return db
    .select()
    .from(marketplaceOperations)
    .where(and(...where))
    .orderBy(desc(marketplaceOperations.id))
    .limit(take)
    .all()
}
