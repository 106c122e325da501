import { and, desc, eq, lt, lte, max, sql } from 'drizzle-orm'
import { marketSnapshots } from '../../../../db/schema/marketplaces'
import { changesOf, type DbOrTx } from '../../../../db/client'
import type { MarketplaceId } from '../adapters/marketplaces.adapter'

export type SnapshotRow = typeof marketSnapshots.$inferSelect

export async function insertSnapshots(tx: DbOrTx, rows: SnapshotRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 200)
    await tx
      .insert(marketSnapshots)
      .values(rows.slice(i, i + 200))
      .run()
}

/** The time of the latest snapshot of the marketplace at or before `atUs`; null when none. */
export async function snapshotTimeAt(db: DbOrTx, marketplace: MarketplaceId, atUs: number): Promise<number | null> {
  return (
    (
      await db
        .select({ at: max(marketSnapshots.takenAt) })
        .from(marketSnapshots)
        .where(and(eq(marketSnapshots.marketplace, marketplace), lte(marketSnapshots.takenAt, atUs)))
        .get()
    )?.at ?? null
  )
}

/** Every model's row of the marketplace's snapshot taken at `takenAt`. */
export async function snapshotAt(db: DbOrTx, marketplace: MarketplaceId, takenAt: number): Promise<SnapshotRow[]> {
  return db
    .select()
    .from(marketSnapshots)
    .where(and(eq(marketSnapshots.marketplace, marketplace), eq(marketSnapshots.takenAt, takenAt)))
    .orderBy(marketSnapshots.gpuModel)
    .all()
}

/** The model's row of the latest snapshot at or before `atUs` that lists it. */
export async function modelAt(db: DbOrTx, marketplace: MarketplaceId, gpuModel: string, atUs: number): Promise<SnapshotRow | undefined> {
  return db
    .select()
    .from(marketSnapshots)
    .where(and(eq(marketSnapshots.marketplace, marketplace), eq(marketSnapshots.gpuModel, gpuModel), lte(marketSnapshots.takenAt, atUs)))
    .orderBy(desc(marketSnapshots.takenAt))
    .limit(1)
    .get()
}

export async function pruneSnapshots(tx: DbOrTx, beforeUs: number): Promise<number> {
  return changesOf(await tx.delete(marketSnapshots).where(lt(marketSnapshots.takenAt, beforeUs)).run())
}

/** Older snapshots keep their summary only: standing reads the latest prices, movement the summaries. */
export async function dropPricesBefore(tx: DbOrTx, marketplace: MarketplaceId, beforeUs: number): Promise<void> {
  await tx
    .update(marketSnapshots)
    .set({ prices: [] })
    .where(and(eq(marketSnapshots.marketplace, marketplace), lt(marketSnapshots.takenAt, beforeUs), sql`${marketSnapshots.prices} != '[]'`))
    .run()
}
