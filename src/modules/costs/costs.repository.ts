import { eq } from 'drizzle-orm'
import { costBases } from '../../../db/schema/costs'
import type { DbOrTx } from '../../../db/client'

export type CostBasisRow = typeof costBases.$inferSelect

export async function findCostBasis(db: DbOrTx, tenantId: string): Promise<CostBasisRow | undefined> {
  return await db.select().from(costBases).where(eq(costBases.tenantId, tenantId)).get()
}

export async function saveCostBasis(tx: DbOrTx, row: CostBasisRow): Promise<void> {
  const { tenantId: _t, ...set } = row
  await tx.insert(costBases).values(row).onConflictDoUpdate({ target: costBases.tenantId, set }).run()
}
