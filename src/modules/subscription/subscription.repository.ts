import { and, desc, eq, inArray, lte } from 'drizzle-orm'
import { notificationEvents, subscriptionChanges } from '../../../db/schema/subscription'
import type { DbOrTx } from '../../../db/client'

export type ChangeRow = typeof subscriptionChanges.$inferSelect
const PENDING: ChangeRow['status'][] = ['scheduled', 'awaiting_payment']

/** The tenant's one live change: scheduled or awaiting payment. */
export function pendingChange(db: DbOrTx, tenantId: string): ChangeRow | undefined {
  return db
    .select()
    .from(subscriptionChanges)
    .where(and(eq(subscriptionChanges.tenantId, tenantId), inArray(subscriptionChanges.status, PENDING)))
    .get()
}

export function awaitingPaymentChange(db: DbOrTx, tenantId: string): ChangeRow | undefined {
  return db
    .select()
    .from(subscriptionChanges)
    .where(and(eq(subscriptionChanges.tenantId, tenantId), eq(subscriptionChanges.status, 'awaiting_payment')))
    .get()
}

export function lastChange(db: DbOrTx, tenantId: string): ChangeRow | undefined {
  return db.select().from(subscriptionChanges).where(eq(subscriptionChanges.tenantId, tenantId)).orderBy(desc(subscriptionChanges.id)).limit(1).get()
}

export function findTenantChange(db: DbOrTx, tenantId: string, id: string): ChangeRow | undefined {
  return db
    .select()
    .from(subscriptionChanges)
    .where(and(eq(subscriptionChanges.tenantId, tenantId), eq(subscriptionChanges.id, id)))
    .get()
}

export function findChange(db: DbOrTx, id: string): ChangeRow | undefined {
  return db.select().from(subscriptionChanges).where(eq(subscriptionChanges.id, id)).get()
}

/** Scheduled changes whose effective instant has come. */
export function dueChanges(db: DbOrTx, now: number): ChangeRow[] {
  return db
    .select()
    .from(subscriptionChanges)
    .where(and(eq(subscriptionChanges.status, 'scheduled'), lte(subscriptionChanges.effectiveAt, now)))
    .all()
}

export function insertChange(tx: DbOrTx, row: ChangeRow): void {
  tx.insert(subscriptionChanges).values(row).run()
}

export function updateChange(tx: DbOrTx, id: string, patch: Partial<ChangeRow>): void {
  tx.update(subscriptionChanges).set(patch).where(eq(subscriptionChanges.id, id)).run()
}

/** Something to tell a tenant, recorded in the transaction that causes it; the notifications feature delivers it. */
export function insertNotificationEvent(tx: DbOrTx, row: typeof notificationEvents.$inferInsert): void {
  tx.insert(notificationEvents).values(row).run()
}
