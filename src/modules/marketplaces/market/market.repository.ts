import { and, desc, eq, lt, lte, max, sql } from 'drizzle-orm'
import { marketSnapshots } from '../../../../db/schema/marketplaces'
import { changesOf, type DbOrTx } from '../../../../db/client'
import type { MarketplaceId } from '../adapters/marketplaces.adapter'

export type SnapshotRow = typeof marketSnapshots.$inferSelect

export function insertSnapshots(tx: DbOrTx, rows: SnapshotRow[]): void {
  for (let i = 0; i < rows.length; i += 200)
    tx.insert(marketSnapshots)
      .values(rows.slice(i, i + 200))
      .run()
}

/** The time of the latest snapshot of the marketplace at or before `atUs`; null when none. */
export function snapshotTimeAt(db: DbOrTx, marketplace: MarketplaceId, atUs: number): number | null {
  return (
    db
      .select({ at: max(marketSnapshots.takenAt) })
      .from(marketSnapshots)
      .where(and(eq(marketSnapshots.marketplace, marketplace), lte(marketSnapshots.takenAt, atUs)))
      .get()?.at ?? null
  )
}

/** Every model's row of the marketplace's snapshot taken at `takenAt`. */
export function snapshotAt(db: DbOrTx, marketplace: MarketplaceId, takenAt: number): SnapshotRow[] {
  return db
    .select()
    .from(marketSnapshots)
    .where(and(eq(marketSnapshots.marketplace, marketplace), eq(marketSnapshots.takenAt, takenAt)))
    .orderBy(marketSnapshots.gpuModel)
    .all()
}

/** The model's row of the latest snapshot at or before `atUs` that lists it. */
export function modelAt(db: DbOrTx, marketplace: MarketplaceId, gpuModel: string, atUs: number): SnapshotRow | undefined {
  return db
    .select()
    .from(marketSnapshots)
    .where(and(eq(marketSnapshots.marketplace, marketplace), eq(marketSnapshots.gpuModel, gpuModel), lte(marketSnapshots.takenAt, atUs)))
    .orderBy(desc(marketSnapshots.takenAt))
    .limit(1)
    .get()
}

export function pruneSnapshots(tx: DbOrTx, beforeUs: number): number {
  return changesOf(tx.delete(marketSnapshots).where(lt(marketSnapshots.takenAt, beforeUs)).run())
}

/** Older snapshots keep their summary only: standing reads the latest prices, movement the summaries. */
export function dropPricesBefore(tx: DbOrTx, marketplace: MarketplaceId, beforeUs: number): void {
  tx.update(marketSnapshots)
    .set({ prices: [] })
    .where(and(eq(marketSnapshots.marketplace, marketplace), lt(marketSnapshots.takenAt, beforeUs), sql`${marketSnapshots.prices} != '[]'`))
    .run()
}
