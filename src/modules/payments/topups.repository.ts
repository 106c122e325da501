import { and, eq } from 'drizzle-orm'
import { topups } from '../../../db/schema'
import type { DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'

export type TopupRow = typeof topups.$inferSelect
export const TERMINAL: TopupRow['status'][] = ['succeeded', 'review', 'expired', 'failed']

/** Writes `patch` to the top-up and moves its version on; returns the row as it now is. */
export function changeTopup(tx: DbOrTx, deps: Pick<Deps, 'clock'>, t: TopupRow, patch: Partial<TopupRow>): TopupRow {
  const next = { ...t, ...patch, updatedAt: deps.clock.nowUs(), version: t.version + 1 }
  tx.update(topups)
    .set({ ...patch, updatedAt: next.updatedAt, version: next.version })
    .where(eq(topups.id, t.id))
    .run()
  return next
}

export function topupById(tx: DbOrTx, id: string): TopupRow | undefined {
  return tx.select().from(topups).where(eq(topups.id, id)).get()
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
