import { and, desc, eq, inArray, lt } from 'drizzle-orm'
import type { DbOrTx } from '../../../../db/client'
import { renterReports } from '../../../../db/schema/marketplaces'
import type { MarketplaceId } from '../adapters/marketplaces.adapter'

export type RenterReportRow = typeof renterReports.$inferSelect

/** Which of these report keys the tenant already keeps for the machine. */
export async function knownReportKeys(
  db: DbOrTx,
  tenantId: string,
  marketplace: MarketplaceId,
  externalMachineId: string,
  keys: string[],
): Promise<Set<string>> {
  if (!keys.length) return new Set()
  const rows = await db
    .select({ key: renterReports.reportKey })
    .from(renterReports)
    .where(
      and(
        eq(renterReports.tenantId, tenantId),
        eq(renterReports.marketplace, marketplace),
        eq(renterReports.externalMachineId, externalMachineId),
        inArray(renterReports.reportKey, keys),
      ),
    )
    .all()
  return new Set(rows.map((r) => r.key))
}

export async function insertRenterReport(db: DbOrTx, row: RenterReportRow): Promise<void> {
  await db.insert(renterReports).values(row).run()
}

/** A server's reports, newest first read first; ids are time-ordered, so the id is the position. */
export async function renterReportsOf(db: DbOrTx, tenantId: string, serverId: string, beforeId: string | undefined, take: number): Promise<RenterReportRow[]> {
  const where = [eq(renterReports.tenantId, tenantId), eq(renterReports.serverId, serverId)]
  if (beforeId) where.push(lt(renterReports.id, beforeId))
  return db
    .select()
    .from(renterReports)
    .where(and(...where))
    .orderBy(desc(renterReports.id))
    .limit(take)
    .all()
}
