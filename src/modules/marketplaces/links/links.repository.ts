import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import { marketplaceLinks } from '../../../../db/schema/marketplaces'
import { changesOf, type DbOrTx } from '../../../../db/client'
import type { MarketplaceId } from '../adapters/marketplaces.adapter'

export type LinkRow = typeof marketplaceLinks.$inferSelect
export type LinkState = LinkRow['state']

/** The most links a tenant keeps (GET /marketplaces/links answers at most this many). */
export const MAX_LINKS = 512

export function findLink(db: DbOrTx, tenantId: string, serverId: string, marketplace: MarketplaceId): LinkRow | undefined {
  return db
    .select()
    .from(marketplaceLinks)
    .where(and(eq(marketplaceLinks.tenantId, tenantId), eq(marketplaceLinks.serverId, serverId), eq(marketplaceLinks.marketplace, marketplace)))
    .get()
}

/** Every link of the tenant, oldest first (at most MAX_LINKS). */
export function linksOf(db: DbOrTx, tenantId: string): LinkRow[] {
  return db
    .select()
    .from(marketplaceLinks)
    .where(eq(marketplaceLinks.tenantId, tenantId))
    .orderBy(asc(marketplaceLinks.linkedAt), asc(marketplaceLinks.id))
    .limit(MAX_LINKS)
    .all()
}

/** The tenant's links on one marketplace (who holds which machine). */
export function linksOnMarketplace(db: DbOrTx, tenantId: string, marketplace: MarketplaceId): LinkRow[] {
  return db
    .select()
    .from(marketplaceLinks)
    .where(and(eq(marketplaceLinks.tenantId, tenantId), eq(marketplaceLinks.marketplace, marketplace)))
    .orderBy(asc(marketplaceLinks.linkedAt), asc(marketplaceLinks.id))
    .all()
}

/** The tenant's links to one machine of a marketplace (more than one is a conflict). */
export function linksToMachine(db: DbOrTx, tenantId: string, marketplace: MarketplaceId, externalMachineId: string): LinkRow[] {
  return db
    .select()
    .from(marketplaceLinks)
    .where(
      and(eq(marketplaceLinks.tenantId, tenantId), eq(marketplaceLinks.marketplace, marketplace), eq(marketplaceLinks.externalMachineId, externalMachineId)),
    )
    .all()
}

/** Every link of every tenant (the earnings.sample job walks them). */
export function allLinks(db: DbOrTx): LinkRow[] {
  return db.select().from(marketplaceLinks).orderBy(asc(marketplaceLinks.tenantId), asc(marketplaceLinks.id)).all()
}

/** The links made through one connected account (the tenant's links on its marketplace). */
export function linksOfAccount(db: DbOrTx, accountId: string): LinkRow[] {
  return db.select().from(marketplaceLinks).where(eq(marketplaceLinks.accountId, accountId)).orderBy(asc(marketplaceLinks.id)).all()
}

/** Every link (on either marketplace) of the given servers of the tenant. */
export function linksOfServers(db: DbOrTx, tenantId: string, serverIds: string[]): LinkRow[] {
  if (!serverIds.length) return []
  return db
    .select()
    .from(marketplaceLinks)
    .where(and(eq(marketplaceLinks.tenantId, tenantId), inArray(marketplaceLinks.serverId, serverIds)))
    .all()
}

export function updateLink(
  tx: DbOrTx,
  id: string,
  patch: Partial<
    Pick<
      LinkRow,
      'state' | 'lastSeenAt' | 'remote' | 'marketplaceB' | 'offer' | 'offerPublishedAt' | 'endDateDays' | 'endDateExtendedTo' | 'endDateExtendedAt' | 'idleJob'
    >
  >,
): void {
  tx.update(marketplaceLinks).set(patch).where(eq(marketplaceLinks.id, id)).run()
}

export function countLinks(db: DbOrTx, tenantId: string): number {
  return db.select({ n: sql<number>`count(*)` }).from(marketplaceLinks).where(eq(marketplaceLinks.tenantId, tenantId)).get()?.n ?? 0
}

export function insertLink(tx: DbOrTx, row: LinkRow): void {
  tx.insert(marketplaceLinks).values(row).run()
}

/** Moves the given links of the tenant to `state`. */
export function setLinksState(tx: DbOrTx, tenantId: string, ids: string[], state: LinkState): void {
  if (!ids.length) return
  tx.update(marketplaceLinks)
    .set({ state })
    .where(and(eq(marketplaceLinks.tenantId, tenantId), inArray(marketplaceLinks.id, ids)))
    .run()
}

export function deleteLink(tx: DbOrTx, tenantId: string, serverId: string, marketplace: MarketplaceId): number {
  return changesOf(
    tx
      .delete(marketplaceLinks)
      .where(and(eq(marketplaceLinks.tenantId, tenantId), eq(marketplaceLinks.serverId, serverId), eq(marketplaceLinks.marketplace, marketplace)))
      .run(),
  )
}
