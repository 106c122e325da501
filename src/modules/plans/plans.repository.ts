import { asc, eq } from 'drizzle-orm'
import { plans } from '../../../db/schema/plans'
import type { DbOrTx } from '../../../db/client'

export type PlanRow = typeof plans.$inferSelect

export function findPlan(db: DbOrTx, code: string): PlanRow | undefined {
  return db.select().from(plans).where(eq(plans.code, code)).get()
}

export function listPlans(db: DbOrTx): PlanRow[] {
  return db.select().from(plans).orderBy(asc(plans.position)).all()
}

export function savePlan(tx: DbOrTx, row: PlanRow): void {
  tx.insert(plans).values(row).onConflictDoUpdate({ target: plans.code, set: row }).run()
}
