import { and, asc, eq, gt, lte } from 'drizzle-orm'
import { planAssignments, planPrices, plans } from '../../../db/schema/plans'
import type { DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { US_PER_HOUR } from '../../platform/time'
import { tenantPlanCodes } from '../tenants'

/**
 * Plan history, so an hour is priced by the plan and the price in force during it, whenever the
 * charge job books it (docs/billing.md "Which plan and price an hour gets"):
 *
 * - plan_assignments: a tenant's plan from an instant on, one row per change;
 * - plan_prices: a catalogue plan's price from an instant on, one row per price edit.
 *
 * A change made at 14:35 is in force from 14:00: the hour it happens in gets the new plan or price
 * (that hour cannot have been booked yet: booking waits 1 h 15 min), every hour that ended before
 * keeps the old one. Without any row, the tenant's current plan and the catalogue's current price
 * apply (they have not changed since these tables exist).
 */
export const hourStartOf = (us: number) => Math.floor(us / US_PER_HOUR) * US_PER_HOUR

/**
 * Records that `tenantId` is on `toPlan` (null: no plan) from `effectiveFrom` on. On a tenant's
 * first change, the plan it had (`fromPlan`) is recorded from the beginning of time, so the hours
 * before keep it. A later decision replaces assignments that had not started yet.
 */
export async function assignPlan(
  tx: DbOrTx,
  deps: Pick<Deps, 'clock'>,
  tenantId: string,
  fromPlan: string | null,
  toPlan: string | null,
  effectiveFrom: number,
): Promise<void> {
  const now = deps.clock.nowUs()
  const any = await tx.select({ t: planAssignments.tenantId }).from(planAssignments).where(eq(planAssignments.tenantId, tenantId)).limit(1).get()
  if (!any && effectiveFrom > 0) await tx.insert(planAssignments).values({ tenantId, effectiveFrom: 0, planCode: fromPlan, createdAt: now }).run()
  await tx
    .delete(planAssignments)
    .where(and(eq(planAssignments.tenantId, tenantId), gt(planAssignments.effectiveFrom, effectiveFrom)))
    .run()
  await tx
    .insert(planAssignments)
    .values({ tenantId, effectiveFrom, planCode: toPlan, createdAt: now })
    .onConflictDoUpdate({ target: [planAssignments.tenantId, planAssignments.effectiveFrom], set: { planCode: toPlan, createdAt: now } })
    .run()
}

/**
 * Records a catalogue price edit from the start of the current hour on; on a plan's first edit the
 * price it had is recorded from the beginning of time, so past hours keep it.
 */
export async function recordPriceChange(
  tx: DbOrTx,
  deps: Pick<Deps, 'clock'>,
  planCode: string,
  oldPrice: number | null,
  newPrice: number | null,
): Promise<void> {
  const now = deps.clock.nowUs()
  const from = hourStartOf(now)
  await tx.insert(planPrices).values({ planCode, effectiveFrom: 0, priceMicrosPerServerMonth: oldPrice, createdAt: now }).onConflictDoNothing().run()
  await tx
    .insert(planPrices)
    .values({ planCode, effectiveFrom: from, priceMicrosPerServerMonth: newPrice, createdAt: now })
    .onConflictDoUpdate({ target: [planPrices.planCode, planPrices.effectiveFrom], set: { priceMicrosPerServerMonth: newPrice, createdAt: now } })
    .run()
}

export type PricedPlan = { planCode: string | null; price: number | null }

/** Every tenant's plan and that plan's price during the hour starting at `hourUs`. */
export async function plansDuringHour(tx: DbOrTx, hourUs: number): Promise<Map<string, PricedPlan>> {
  const prices = new Map((await tx.select().from(plans).all()).map((p) => [p.code, p.priceMicrosPerServerMonth]))
  for (const v of await tx.select().from(planPrices).where(lte(planPrices.effectiveFrom, hourUs)).orderBy(asc(planPrices.effectiveFrom)).all())
    prices.set(v.planCode, v.priceMicrosPerServerMonth)
  const planOf = new Map<string, string | null>()
  for (const t of await tenantPlanCodes(tx)) planOf.set(t.id, t.planCode)
  for (const a of await tx.select().from(planAssignments).where(lte(planAssignments.effectiveFrom, hourUs)).orderBy(asc(planAssignments.effectiveFrom)).all())
    planOf.set(a.tenantId, a.planCode)
  const out = new Map<string, PricedPlan>()
  for (const [tenantId, planCode] of planOf) out.set(tenantId, { planCode, price: planCode === null ? null : (prices.get(planCode) ?? null) })
  return out
}
