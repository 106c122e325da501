import { and, desc, eq, inArray, lt } from 'drizzle-orm'
import { paymentNotifications, topups } from '../../../db/schema/payments'
import { changesOf, type DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'

export type TopupRow = typeof topups.$inferSelect
export const TERMINAL: TopupRow['status'][] = ['succeeded', 'review', 'expired', 'failed']

export function insertTopup(tx: DbOrTx, row: TopupRow): void {
  tx.insert(topups).values(row).run()
}

/** Writes `patch` to the top-up and moves its version on; returns the row as it now is. */
export function changeTopup(tx: DbOrTx, deps: Pick<Deps, 'clock'>, t: TopupRow, patch: Partial<TopupRow>): TopupRow {
  const next = { ...t, ...patch, updatedAt: deps.clock.nowUs(), version: t.version + 1 }
  tx.update(topups)
    .set({ ...patch, updatedAt: next.updatedAt, version: next.version })
    .where(eq(topups.id, t.id))
    .run()
  return next
}

/**
 * The credit's claim: moves the top-up to `patch` only while it is in one of `from`. True for the
 * one transaction that moved it.
 */
export function claimTopup(tx: DbOrTx, id: string, from: TopupRow['status'][], patch: Partial<TopupRow>): boolean {
  return (
    changesOf(
      tx
        .update(topups)
        .set(patch)
        .where(and(eq(topups.id, id), inArray(topups.status, from)))
        .run(),
    ) === 1
  )
}

export function topupById(tx: DbOrTx, id: string): TopupRow | undefined {
  return tx.select().from(topups).where(eq(topups.id, id)).get()
}

export function findTenantTopup(db: DbOrTx, tenantId: string, id: string): TopupRow | undefined {
  return db
    .select()
    .from(topups)
    .where(and(eq(topups.tenantId, tenantId), eq(topups.id, id)))
    .get()
}

/** Newest first, after the cursor's id. */
export function listTenantTopups(db: DbOrTx, tenantId: string, f: { status?: TopupRow['status']; beforeId?: string }, limit: number): TopupRow[] {
  const where = [eq(topups.tenantId, tenantId)]
  if (f.status) where.push(eq(topups.status, f.status))
  if (f.beforeId) where.push(lt(topups.id, f.beforeId))
  return db
    .select()
    .from(topups)
    .where(and(...where))
    .orderBy(desc(topups.id))
    .limit(limit)
    .all()
}

/** Top-ups still waiting for their payment (billing.reconcile reads them back). */
export function openTopups(db: DbOrTx): TopupRow[] {
  return db
    .select()
    .from(topups)
    .where(inArray(topups.status, ['creating', 'partially_paid']))
    .all()
}

/** The top-up a provider's payment belongs to: by the provider's invoice id, else by our order id. */
export function findTopupFor(tx: DbOrTx, provider: string, n: { invoiceId: string | null; orderId: string | null }): TopupRow | undefined {
  if (n.invoiceId) {
    const byInvoice = tx
      .select()
      .from(topups)
      .where(and(eq(topups.provider, provider), eq(topups.invoiceId, n.invoiceId)))
      .get()
    if (byInvoice) return byInvoice
  }
  if (n.orderId)
    return tx
      .select()
      .from(topups)
      .where(and(eq(topups.provider, provider), eq(topups.id, n.orderId)))
      .get()
  return undefined
}

export function insertPaymentNotification(tx: DbOrTx, row: typeof paymentNotifications.$inferInsert): void {
  tx.insert(paymentNotifications).values(row).run()
}

/** True when `id` is one of the tenant's own top-ups (a foreign id is just unknown). */
export function tenantOwnsTopup(db: DbOrTx, tenantId: string, id: string): boolean {
  return (
    db
      .select({ id: topups.id })
      .from(topups)
      .where(and(eq(topups.tenantId, tenantId), eq(topups.id, id)))
      .get() !== undefined
  )
}
