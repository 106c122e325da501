import { and, desc, eq, gte, lt, type SQL } from 'drizzle-orm'
import { auditLog } from '../../../db/schema/audit'
import type { DbOrTx } from '../../../db/client'

export type AuditRow = typeof auditLog.$inferSelect

export async function insertAudit(tx: DbOrTx, row: AuditRow): Promise<void> {
  await tx.insert(auditLog).values(row).run()
}

export type AuditFilter = {
  actorKind?: AuditRow['actorKind']
  actorId?: string
  operation?: string
  outcome?: AuditRow['outcome']
  fromUs?: number
  toUs?: number
  beforeId?: string
}

/** Newest first (ids are UUIDv7, so id order is time order). */
export async function listAudit(db: DbOrTx, tenantId: string, f: AuditFilter, limit: number): Promise<AuditRow[]> {
  const where: SQL[] = [eq(auditLog.tenantId, tenantId)]
  if (f.actorKind) where.push(eq(auditLog.actorKind, f.actorKind))
  if (f.actorId) where.push(eq(auditLog.actorId, f.actorId))
  if (f.operation) where.push(eq(auditLog.operation, f.operation))
  if (f.outcome) where.push(eq(auditLog.outcome, f.outcome))
  if (f.fromUs !== undefined) where.push(gte(auditLog.createdAt, f.fromUs))
  if (f.toUs !== undefined) where.push(lt(auditLog.createdAt, f.toUs))
  if (f.beforeId) where.push(lt(auditLog.id, f.beforeId))
  return await db
    .select()
    .from(auditLog)
    .where(and(...where))
    .orderBy(desc(auditLog.id))
    .limit(limit)
    .all()
}
