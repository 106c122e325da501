import { asc, eq } from 'drizzle-orm'
import { plans } from '../../../db/schema/plans'
import type { DbOrTx } from '../../../db/client'

export type PlanRow = typeof plans.$inferSelect

export async function findPlan(db: DbOrTx, code: string): Promise<PlanRow | undefined> {
  return await db.select().from(plans).where(eq(plans.code, code)).get()
}

export async function listPlans(db: DbOrTx): Promise<PlanRow[]> {
  return await db.select().from(plans).orderBy(asc(plans.position)).all()
}

export async function savePlan(tx: DbOrTx, row: PlanRow): Promise<void> {
  await tx.insert(plans).values(row).onConflictDoUpdate({ target: plans.code, set: row }).run()
}
