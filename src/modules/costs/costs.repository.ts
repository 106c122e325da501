import { eq } from 'drizzle-orm'
import { costBases } from '../../../db/schema/costs'
import type { DbOrTx } from '../../../db/client'

export type CostBasisRow = typeof costBases.$inferSelect

export function findCostBasis(db: DbOrTx, tenantId: string): CostBasisRow | undefined {
  return db.select().from(costBases).where(eq(costBases.tenantId, tenantId)).get()
}

export function saveCostBasis(tx: DbOrTx, row: CostBasisRow): void {
  const { tenantId: _t, ...set } = row
  tx.insert(costBases).values(row).onConflictDoUpdate({ target: costBases.tenantId, set }).run()
}
