import { asc, eq } from 'drizzle-orm'
import { plans } from '../../../db/schema'
import type { DbOrTx } from '../../../db/client'

export type PlanRow = typeof plans.$inferSelect

export function findPlan(db: DbOrTx, code: string): PlanRow | undefined {
  return db.select().from(plans).where(eq(plans.code, code)).get()
}

export function listPlans(db: DbOrTx): PlanRow[] {
  return db.select().from(plans).orderBy(asc(plans.position)).all()
}

export function planFeatures(plan: PlanRow | undefined): string[] {
  if (!plan) return []
  try {
    return JSON.parse(plan.features) as string[]
  } catch {
    return []
  }
}
