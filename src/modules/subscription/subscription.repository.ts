import { and, desc, eq, inArray, lte } from 'drizzle-orm'
import { notificationEvents, subscriptionChanges } from '../../../db/schema/subscription'
import type { DbOrTx } from '../../../db/client'

export type ChangeRow = typeof subscriptionChanges.$inferSelect
const PENDING: ChangeRow['status'][] = ['scheduled', 'awaiting_payment']

/** The tenant's one live change: scheduled or awaiting payment. */
export async function pendingChange(db: DbOrTx, tenantId: string): Promise<ChangeRow | undefined> {
  return await db
    .select()
    .from(subscriptionChanges)
    .where(and(eq(subscriptionChanges.tenantId, tenantId), inArray(subscriptionChanges.status, PENDING)))
    .get()
}

export async function awaitingPaymentChange(db: DbOrTx, tenantId: string): Promise<ChangeRow | undefined> {
  return await db
    .select()
    .from(subscriptionChanges)
    .where(and(eq(subscriptionChanges.tenantId, tenantId), eq(subscriptionChanges.status, 'awaiting_payment')))
    .get()
}

export async function lastChange(db: DbOrTx, tenantId: string): Promise<ChangeRow | undefined> {
  return await db.select().from(subscriptionChanges).where(eq(subscriptionChanges.tenantId, tenantId)).orderBy(desc(subscriptionChanges.id)).limit(1).get()
}

export async function findTenantChange(db: DbOrTx, tenantId: string, id: string): Promise<ChangeRow | undefined> {
  return await db
    .select()
    .from(subscriptionChanges)
    .where(and(eq(subscriptionChanges.tenantId, tenantId), eq(subscriptionChanges.id, id)))
    .get()
}

export async function findChange(db: DbOrTx, id: string): Promise<ChangeRow | undefined> {
  return await db.select().from(subscriptionChanges).where(eq(subscriptionChanges.id, id)).get()
}

/** Scheduled changes whose effective instant has come. */
export async function dueChanges(db: DbOrTx, now: number): Promise<ChangeRow[]> {
  return await db
    .select()
    .from(subscriptionChanges)
    .where(and(eq(subscriptionChanges.status, 'scheduled'), lte(subscriptionChanges.effectiveAt, now)))
    .all()
}

export async function insertChange(tx: DbOrTx, row: ChangeRow): Promise<void> {
  await tx.insert(subscriptionChanges).values(row).run()
}

export async function updateChange(tx: DbOrTx, id: string, patch: Partial<ChangeRow>): Promise<void> {
  await tx.update(subscriptionChanges).set(patch).where(eq(subscriptionChanges.id, id)).run()
}

/** Something to tell a tenant, recorded in the transaction that causes it; the notifications feature delivers it. */
export async function insertNotificationEvent(tx: DbOrTx, row: typeof notificationEvents.$inferInsert): Promise<void> {
  await tx.insert(notificationEvents).values(row).run()
}
