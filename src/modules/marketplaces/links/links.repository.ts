import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import { marketplaceLinks } from '../../../../db/schema/marketplaces'
import { changesOf, type DbOrTx } from '../../../../db/client'
import type { MarketplaceId } from '../adapters/marketplaces.adapter'

export type LinkRow = typeof marketplaceLinks.$inferSelect
export type LinkState = LinkRow['state']

/** The most links a tenant keeps (GET /marketplaces/links answers at most this many). */
export const MAX_LINKS = 512

export async function findLink(db: DbOrTx, tenantId: string, serverId: string, marketplace: MarketplaceId): Promise<LinkRow | undefined> {
  return db
    .select()
    .from(marketplaceLinks)
    .where(and(eq(marketplaceLinks.tenantId, tenantId), eq(marketplaceLinks.serverId, serverId), eq(marketplaceLinks.marketplace, marketplace)))
    .get()
}

/** Every link of the tenant, oldest first (at most MAX_LINKS). */
export async function linksOf(db: DbOrTx, tenantId: string): Promise<LinkRow[]> {
  return db
    .select()
    .from(marketplaceLinks)
    .where(eq(marketplaceLinks.tenantId, tenantId))
    .orderBy(asc(marketplaceLinks.linkedAt), asc(marketplaceLinks.id))
    .limit(MAX_LINKS)
    .all()
}

/** The tenant's links on one marketplace (who holds which machine). */
export async function linksOnMarketplace(db: DbOrTx, tenantId: string, marketplace: MarketplaceId): Promise<LinkRow[]> {
  return db
    .select()
    .from(marketplaceLinks)
    .where(and(eq(marketplaceLinks.tenantId, tenantId), eq(marketplaceLinks.marketplace, marketplace)))
    .orderBy(asc(marketplaceLinks.linkedAt), asc(marketplaceLinks.id))
    .all()
}

/** The tenant's links to one machine of a marketplace (more than one is a conflict). */
export async function linksToMachine(db: DbOrTx, tenantId: string, marketplace: MarketplaceId, externalMachineId: string): Promise<LinkRow[]> {
  return db
    .select()
    .from(marketplaceLinks)
    .where(
      and(eq(marketplaceLinks.tenantId, tenantId), eq(marketplaceLinks.marketplace, marketplace), eq(marketplaceLinks.externalMachineId, externalMachineId)),
    )
    .all()
}

/** Every link of every tenant (the earnings.sample job walks them). */
export async function allLinks(db: DbOrTx): Promise<LinkRow[]> {
  return db.select().from(marketplaceLinks).orderBy(asc(marketplaceLinks.tenantId), asc(marketplaceLinks.id)).all()
}

/** The links made through one connected account (the tenant's links on its marketplace). */
export async function linksOfAccount(db: DbOrTx, accountId: string): Promise<LinkRow[]> {
  return db.select().from(marketplaceLinks).where(eq(marketplaceLinks.accountId, accountId)).orderBy(asc(marketplaceLinks.id)).all()
}

/** Every link (on either marketplace) of the given servers of the tenant. */
export async function linksOfServers(db: DbOrTx, tenantId: string, serverIds: string[]): Promise<LinkRow[]> {
  if (!serverIds.length) return []
  return db
    .select()
    .from(marketplaceLinks)
    .where(and(eq(marketplaceLinks.tenantId, tenantId), inArray(marketplaceLinks.serverId, serverIds)))
    .all()
}

export async function updateLink(
  tx: DbOrTx,
  id: string,
  patch: Partial<
    Pick<
      LinkRow,
      'state' | 'lastSeenAt' | 'remote' | 'marketplaceB' | 'offer' | 'offerPublishedAt' | 'endDateDays' | 'endDateExtendedTo' | 'endDateExtendedAt' | 'idleJob'
    >
  >,
): Promise<void> {
  await tx.update(marketplaceLinks).set(patch).where(eq(marketplaceLinks.id, id)).run()
}

export async function countLinks(db: DbOrTx, tenantId: string): Promise<number> {
  return (await db.select({ n: sql<number>`count(*)` }).from(marketplaceLinks).where(eq(marketplaceLinks.tenantId, tenantId)).get())?.n ?? 0
}

export async function insertLink(tx: DbOrTx, row: LinkRow): Promise<void> {
  await tx.insert(marketplaceLinks).values(row).run()
}

/** Moves the given links of the tenant to `state`. */
export async function setLinksState(tx: DbOrTx, tenantId: string, ids: string[], state: LinkState): Promise<void> {
  if (!ids.length) return
  await tx
    .update(marketplaceLinks)
    .set({ state })
    .where(and(eq(marketplaceLinks.tenantId, tenantId), inArray(marketplaceLinks.id, ids)))
    .run()
}

export async function deleteLink(tx: DbOrTx, tenantId: string, serverId: string, marketplace: MarketplaceId): Promise<number> {
  return changesOf(
    await tx
      .delete(marketplaceLinks)
      .where(and(eq(marketplaceLinks.tenantId, tenantId), eq(marketplaceLinks.serverId, serverId), eq(marketplaceLinks.marketplace, marketplace)))
      .run(),
  )
}
