import { and, desc, eq, inArray, lt } from 'drizzle-orm'
import { paymentNotifications, topups } from '../../../db/schema/payments'
import { changesOf, type DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'

export type TopupRow = typeof topups.$inferSelect
export const TERMINAL: TopupRow['status'][] = ['succeeded', 'review', 'expired', 'failed']

export async function insertTopup(tx: DbOrTx, row: TopupRow): Promise<void> {
  await tx.insert(topups).values(row).run()
}

/** Writes `patch` to the top-up and moves its version on; returns the row as it now is. */
export async function changeTopup(tx: DbOrTx, deps: Pick<Deps, 'clock'>, t: TopupRow, patch: Partial<TopupRow>): Promise<TopupRow> {
  const next = { ...t, ...patch, updatedAt: deps.clock.nowUs(), version: t.version + 1 }
  await tx
    .update(topups)
    .set({ ...patch, updatedAt: next.updatedAt, version: next.version })
    .where(eq(topups.id, t.id))
    .run()
  return next
}

/**
 * The credit's claim: moves the top-up to `patch` only while it is in one of `from`. True for the
 * one transaction that moved it.
 */
export async function claimTopup(tx: DbOrTx, id: string, from: TopupRow['status'][], patch: Partial<TopupRow>): Promise<boolean> {
  const r = await tx
    .update(topups)
    .set(patch)
    .where(and(eq(topups.id, id), inArray(topups.status, from)))
    .run()
  return changesOf(r) === 1
}

export async function topupById(tx: DbOrTx, id: string): Promise<TopupRow | undefined> {
  return await tx.select().from(topups).where(eq(topups.id, id)).get()
}

export async function findTenantTopup(db: DbOrTx, tenantId: string, id: string): Promise<TopupRow | undefined> {
  return await db
    .select()
    .from(topups)
    .where(and(eq(topups.tenantId, tenantId), eq(topups.id, id)))
    .get()
}

/** Newest first, after the cursor's id. */
export async function listTenantTopups(
  db: DbOrTx,
  tenantId: string,
  f: { status?: TopupRow['status']; beforeId?: string },
  limit: number,
): Promise<TopupRow[]> {
  const where = [eq(topups.tenantId, tenantId)]
  if (f.status) where.push(eq(topups.status, f.status))
  if (f.beforeId) where.push(lt(topups.id, f.beforeId))
  return await db
    .select()
    .from(topups)
    .where(and(...where))
    .orderBy(desc(topups.id))
    .limit(limit)
    .all()
}

/** Top-ups still waiting for their payment (billing.reconcile reads them back). */
export async function openTopups(db: DbOrTx): Promise<TopupRow[]> {
  return await db
    .select()
    .from(topups)
    .where(inArray(topups.status, ['creating', 'partially_paid']))
    .all()
}

/** The top-up a provider's payment belongs to: by the provider's invoice id, else by our order id. */
export async function findTopupFor(tx: DbOrTx, provider: string, n: { invoiceId: string | null; orderId: string | null }): Promise<TopupRow | undefined> {
  if (n.invoiceId) {
    const byInvoice = await tx
      .select()
      .from(topups)
      .where(and(eq(topups.provider, provider), eq(topups.invoiceId, n.invoiceId)))
      .get()
    if (byInvoice) return byInvoice
  }
  if (n.orderId)
    return await tx
      .select()
      .from(topups)
      .where(and(eq(topups.provider, provider), eq(topups.id, n.orderId)))
      .get()
  return undefined
}

export async function insertPaymentNotification(tx: DbOrTx, row: typeof paymentNotifications.$inferInsert): Promise<void> {
  await tx.insert(paymentNotifications).values(row).run()
}

/** True when `id` is one of the tenant's own top-ups (a foreign id is just unknown). */
export async function tenantOwnsTopup(db: DbOrTx, tenantId: string, id: string): Promise<boolean> {
  const r = await db
    .select({ id: topups.id })
    .from(topups)
    .where(and(eq(topups.tenantId, tenantId), eq(topups.id, id)))
    .get()
  return r !== undefined
}
