import { and, asc, eq, isNull } from 'drizzle-orm'
import { unsettledPayments } from '../../../db/schema/payments'
import { changesOf, type DbOrTx } from '../../../db/client'

export type UnsettledRow = typeof unsettledPayments.$inferSelect

/** Records a finished payment that credited nothing; false when it was recorded already (one row per provider payment). */
export async function insertUnsettled(tx: DbOrTx, row: typeof unsettledPayments.$inferInsert): Promise<boolean> {
  return changesOf(await tx.insert(unsettledPayments).values(row).onConflictDoNothing().run()) === 1
}

export async function listUnsettled(db: DbOrTx, all: boolean): Promise<UnsettledRow[]> {
  const q = db.select().from(unsettledPayments)
  return await (all ? q : q.where(isNull(unsettledPayments.settledAt))).orderBy(asc(unsettledPayments.recordedAt), asc(unsettledPayments.id)).all()
}

export async function findUnsettled(db: DbOrTx, id: string): Promise<UnsettledRow | undefined> {
  return await db.select().from(unsettledPayments).where(eq(unsettledPayments.id, id)).get()
}

/** Settles an open row (a settled one stays as it was). */
export async function settleUnsettled(
  tx: DbOrTx,
  id: string,
  patch: Pick<UnsettledRow, 'settledAt' | 'settlement' | 'settlementEntryId' | 'settlementNote'>,
): Promise<void> {
  await tx
    .update(unsettledPayments)
    .set(patch)
    .where(and(eq(unsettledPayments.id, id), isNull(unsettledPayments.settledAt)))
    .run()
}
