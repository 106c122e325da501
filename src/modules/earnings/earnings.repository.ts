import { and, asc, desc, eq, gt, gte, lte, min } from 'drizzle-orm'
import { earningsDays, earningsReports, earningsWatermarks } from '../../../db/schema/earnings'
import { changesOf, type DbOrTx } from '../../../db/client'
import type { MarketplaceId } from '../marketplaces'

export type EarningsDayRow = typeof earningsDays.$inferSelect
type Key = { tenantId: string; serverId: string; marketplace: MarketplaceId }

export async function watermarkOf(db: DbOrTx, k: Key): Promise<number | null> {
  const r = await db
    .select({ at: earningsWatermarks.accruedUntil })
    .from(earningsWatermarks)
    .where(and(eq(earningsWatermarks.tenantId, k.tenantId), eq(earningsWatermarks.serverId, k.serverId), eq(earningsWatermarks.marketplace, k.marketplace)))
    .get()
  return r?.at ?? null
}

/**
 * Moves the watermark from `from` (null: none yet) to `to`; false when another sample moved it
 * first, in which case the caller accrues nothing (the exactly-once step).
 */
export async function moveWatermark(tx: DbOrTx, k: Key, from: number | null, to: number): Promise<boolean> {
  if (from === null) {
    const r = await tx
      .insert(earningsWatermarks)
      .values({ ...k, accruedUntil: to })
      .onConflictDoNothing()
      .run()
    return changesOf(r) === 1
  }
  const r = await tx
    .update(earningsWatermarks)
    .set({ accruedUntil: to })
    .where(
      and(
        eq(earningsWatermarks.tenantId, k.tenantId),
        eq(earningsWatermarks.serverId, k.serverId),
        eq(earningsWatermarks.marketplace, k.marketplace),
        eq(earningsWatermarks.accruedUntil, from),
      ),
    )
    .run()
  return changesOf(r) === 1
}

export async function findDay(db: DbOrTx, k: Key, day: string): Promise<EarningsDayRow | undefined> {
  return await db
    .select()
    .from(earningsDays)
    .where(
      and(eq(earningsDays.tenantId, k.tenantId), eq(earningsDays.serverId, k.serverId), eq(earningsDays.marketplace, k.marketplace), eq(earningsDays.day, day)),
    )
    .get()
}

export async function saveDay(tx: DbOrTx, row: EarningsDayRow): Promise<void> {
  const { tenantId: _t, serverId: _s, marketplace: _m, day: _d, ...set } = row
  await tx
    .insert(earningsDays)
    .values(row)
    .onConflictDoUpdate({ target: [earningsDays.tenantId, earningsDays.serverId, earningsDays.marketplace, earningsDays.day], set })
    .run()
}

/** The tenant's rows from `fromDay` on, newest day first, at most `limit`. */
export async function daysOf(db: DbOrTx, tenantId: string, fromDay: string, limit: number): Promise<EarningsDayRow[]> {
  return await db
    .select()
    .from(earningsDays)
    .where(and(eq(earningsDays.tenantId, tenantId), gte(earningsDays.day, fromDay)))
    .orderBy(desc(earningsDays.day), asc(earningsDays.serverId), asc(earningsDays.marketplace))
    .limit(limit)
    .all()
}

/** The earliest day on record, and the earliest with accrued time. */
export async function firstDays(db: DbOrTx, tenantId: string): Promise<{ collected: string | null; accrued: string | null }> {
  const collected =
    (
      await db
        .select({ d: min(earningsDays.day) })
        .from(earningsDays)
        .where(eq(earningsDays.tenantId, tenantId))
        .get()
    )?.d ?? null
  const accrued =
    (
      await db
        .select({ d: min(earningsDays.day) })
        .from(earningsDays)
        .where(and(eq(earningsDays.tenantId, tenantId), gt(earningsDays.accruedUs, 0)))
        .get()
    )?.d ?? null
  return { collected, accrued }
}

export async function reportReadAt(db: DbOrTx, tenantId: string, marketplace: Key['marketplace']): Promise<number | null> {
  const r = await db
    .select({ at: earningsReports.readAt })
    .from(earningsReports)
    .where(and(eq(earningsReports.tenantId, tenantId), eq(earningsReports.marketplace, marketplace)))
    .get()
  return r?.at ?? null
}

export async function markReportRead(tx: DbOrTx, tenantId: string, marketplace: Key['marketplace'], at: number): Promise<void> {
  await tx
    .insert(earningsReports)
    .values({ tenantId, marketplace, readAt: at })
    .onConflictDoUpdate({ target: [earningsReports.tenantId, earningsReports.marketplace], set: { readAt: at } })
    .run()
}

/** The tenant's rows for days in [fromDay, toDay] (both inclusive). */
export async function daysBetween(db: DbOrTx, tenantId: string, fromDay: string, toDay: string): Promise<EarningsDayRow[]> {
  return await db
    .select()
    .from(earningsDays)
    .where(and(eq(earningsDays.tenantId, tenantId), gte(earningsDays.day, fromDay), lte(earningsDays.day, toDay)))
    .all()
}
