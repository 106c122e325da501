import { and, asc, desc, eq, lt } from 'drizzle-orm'
import { marketplaceAccounts, marketplaceOperations } from '../../../../db/schema/marketplaces'
import { changesOf, type DbOrTx } from '../../../../db/client'
import type { MarketplaceId } from '../adapters/marketplaces.adapter'

export type AccountRow = typeof marketplaceAccounts.$inferSelect
export type OperationRow = typeof marketplaceOperations.$inferSelect

export function findAccount(db: DbOrTx, tenantId: string, marketplace: MarketplaceId): AccountRow | undefined {
  return db
    .select()
    .from(marketplaceAccounts)
    .where(and(eq(marketplaceAccounts.tenantId, tenantId), eq(marketplaceAccounts.marketplace, marketplace)))
    .get()
}

/** Every connected account of every tenant (a key marked invalid is not sent again), for the sync. */
export function connectedAccounts(db: DbOrTx): AccountRow[] {
  return db.select().from(marketplaceAccounts).where(eq(marketplaceAccounts.status, 'connected')).orderBy(asc(marketplaceAccounts.id)).all()
}

export function updateAccount(tx: DbOrTx, id: string, patch: Partial<AccountRow>): void {
  tx.update(marketplaceAccounts).set(patch).where(eq(marketplaceAccounts.id, id)).run()
}

export function accountsOf(db: DbOrTx, tenantId: string): AccountRow[] {
  return db.select().from(marketplaceAccounts).where(eq(marketplaceAccounts.tenantId, tenantId)).orderBy(marketplaceAccounts.marketplace).all()
}

/** Inserts the tenant's account at a marketplace, or replaces its key and clears the last failure. */
export function saveAccount(tx: DbOrTx, row: AccountRow): void {
  const { id: _id, tenantId: _t, marketplace: _m, connectedAt: _c, ...replace } = row
  tx.insert(marketplaceAccounts)
    .values(row)
    .onConflictDoUpdate({ target: [marketplaceAccounts.tenantId, marketplaceAccounts.marketplace], set: replace })
    .run()
}

export function deleteAccount(tx: DbOrTx, tenantId: string, marketplace: MarketplaceId): number {
  return changesOf(
    tx
      .delete(marketplaceAccounts)
      .where(and(eq(marketplaceAccounts.tenantId, tenantId), eq(marketplaceAccounts.marketplace, marketplace)))
      .run(),
  )
}

export function insertOperations(tx: DbOrTx, rows: OperationRow[]): void {
  if (rows.length) tx.insert(marketplaceOperations).values(rows).run()
}

/** Newest first; ids are time-ordered, so the id is the position. */
export function operationsOf(db: DbOrTx, tenantId: string, filter: { serverId?: string; beforeId?: string }, take: number): OperationRow[] {
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
