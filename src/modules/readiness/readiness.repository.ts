import { and, eq } from 'drizzle-orm'
import { readinessStates } from '../../../db/schema/readiness'
import type { DbOrTx } from '../../../db/client'

export type ReadinessStateRow = typeof readinessStates.$inferSelect

/** Every remembered state of the tenant's servers. */
export async function statesOfTenant(db: DbOrTx, tenantId: string): Promise<ReadinessStateRow[]> {
  return await db.select().from(readinessStates).where(eq(readinessStates.tenantId, tenantId)).all()
}

/** The remembered states of one server of the tenant (one per marketplace). */
export async function statesOfServer(db: DbOrTx, tenantId: string, serverId: string): Promise<ReadinessStateRow[]> {
  return await db
    .select()
    .from(readinessStates)
    .where(and(eq(readinessStates.tenantId, tenantId), eq(readinessStates.serverId, serverId)))
    .all()
}

export async function saveState(tx: DbOrTx, row: ReadinessStateRow): Promise<void> {
  const set = {
    verdicts: row.verdicts,
    baselineDriver: row.baselineDriver,
    baselineCuda: row.baselineCuda,
    baselineAt: row.baselineAt,
    lastVerification: row.lastVerification,
    evaluatedAt: row.evaluatedAt,
  }
  // Keyed by (server, marketplace): a server id is one tenant's, so the row stays the tenant's.
  await tx
    .insert(readinessStates)
    .values(row)
    .onConflictDoUpdate({ target: [readinessStates.serverId, readinessStates.marketplace], set })
    .run()
}
