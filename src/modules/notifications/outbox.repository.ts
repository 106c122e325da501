import { and, asc, desc, eq, gte, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm'
import { notificationAttempts, notificationDeliveries, notifications } from '../../../db/schema/notifications'
import type { DbOrTx } from '../../../db/client'

export type NotificationRow = typeof notifications.$inferSelect
export type DeliveryRow = typeof notificationDeliveries.$inferSelect
export type AttemptRow = typeof notificationAttempts.$inferSelect

export function insertNotification(tx: DbOrTx, row: NotificationRow): void {
  tx.insert(notifications).values(row).run()
}

export function insertDelivery(tx: DbOrTx, row: DeliveryRow): void {
  tx.insert(notificationDeliveries).values(row).run()
}

/** The latest notification of the group since `sinceUs`, if any (grouping repeats). */
export function recentInGroup(db: DbOrTx, tenantId: string, groupKey: string, sinceUs: number): NotificationRow | undefined {
  return db
    .select()
    .from(notifications)
    .where(and(eq(notifications.tenantId, tenantId), eq(notifications.groupKey, groupKey), gte(notifications.createdAt, sinceUs)))
    .orderBy(desc(notifications.createdAt))
    .limit(1)
    .get()
}

/** Claims the oldest due delivery (queued, due, not claimed by a live claim) until `claimUntil`. */
export function claimDue(tx: DbOrTx, now: number, claimUntil: number): DeliveryRow | undefined {
  const row = tx
    .select()
    .from(notificationDeliveries)
    .where(
      and(
        eq(notificationDeliveries.status, 'queued'),
        lte(notificationDeliveries.nextAttemptAt, now),
        or(isNull(notificationDeliveries.claimedUntil), lt(notificationDeliveries.claimedUntil, now)),
      ),
    )
    .orderBy(asc(notificationDeliveries.nextAttemptAt), asc(notificationDeliveries.id))
    .limit(1)
    .get()
  if (!row) return undefined
  tx.update(notificationDeliveries).set({ claimedUntil: claimUntil }).where(eq(notificationDeliveries.id, row.id)).run()
  return { ...row, claimedUntil: claimUntil }
}

export function updateDelivery(tx: DbOrTx, id: string, patch: Partial<DeliveryRow>): void {
  tx.update(notificationDeliveries).set(patch).where(eq(notificationDeliveries.id, id)).run()
}

export function insertAttempt(tx: DbOrTx, row: AttemptRow): void {
  tx.insert(notificationAttempts).values(row).run()
}

export function findNotification(db: DbOrTx, id: string): NotificationRow | undefined {
  return db.select().from(notifications).where(eq(notifications.id, id)).get()
}

export function findDelivery(db: DbOrTx, tenantId: string, id: string): DeliveryRow | undefined {
  return db
    .select()
    .from(notificationDeliveries)
    .where(and(eq(notificationDeliveries.tenantId, tenantId), eq(notificationDeliveries.id, id)))
    .get()
}

export function attemptsOf(db: DbOrTx, deliveryId: string): AttemptRow[] {
  return db.select().from(notificationAttempts).where(eq(notificationAttempts.deliveryId, deliveryId)).orderBy(asc(notificationAttempts.at)).all()
}

/** Newest first; ids are time-ordered. */
export function notificationsOf(db: DbOrTx, tenantId: string, beforeId: string | undefined, take: number): NotificationRow[] {
  const where = [eq(notifications.tenantId, tenantId)]
  if (beforeId) where.push(lt(notifications.id, beforeId))
  return db
    .select()
    .from(notifications)
    .where(and(...where))
    .orderBy(desc(notifications.id))
    .limit(take)
    .all()
}

export function deliveriesOf(db: DbOrTx, notificationIds: string[]): DeliveryRow[] {
  if (!notificationIds.length) return []
  return db
    .select()
    .from(notificationDeliveries)
    .where(inArray(notificationDeliveries.notificationId, notificationIds))
    .orderBy(asc(notificationDeliveries.channel))
    .all()
}

/** A notification as another module shows it (an alert incident's linked notifications). */
export type NotificationSummary = Pick<NotificationRow, 'id' | 'category' | 'title' | 'createdAt'>

/**
 * The tenant's notifications whose group key is one of `keys` or starts with one of `prefixes`,
 * created in [fromUs, toUs], oldest first: what one condition produced during a time window.
 */
export function notificationsInGroups(
  db: DbOrTx,
  tenantId: string,
  groups: { keys: readonly string[]; prefixes: readonly string[] },
  fromUs: number,
  toUs: number,
): NotificationSummary[] {
  const match = [
    ...(groups.keys.length ? [inArray(notifications.groupKey, [...groups.keys])] : []),
    // substr, not LIKE: a group key may hold `_`, which LIKE would read as a wildcard.
    ...groups.prefixes.map((p) => sql`substr(${notifications.groupKey}, 1, ${p.length}) = ${p}`),
  ]
  if (!match.length) return []
  return db
    .select({ id: notifications.id, category: notifications.category, title: notifications.title, createdAt: notifications.createdAt })
    .from(notifications)
    .where(and(eq(notifications.tenantId, tenantId), gte(notifications.createdAt, fromUs), lte(notifications.createdAt, toUs), or(...match)))
    .orderBy(asc(notifications.createdAt), asc(notifications.id))
    .all()
}

/** The tenant's notifications among `ids`, oldest first (another tenant's ids match nothing). */
export function notificationSummaries(db: DbOrTx, tenantId: string, ids: readonly string[]): NotificationSummary[] {
  if (!ids.length) return []
  return db
    .select({ id: notifications.id, category: notifications.category, title: notifications.title, createdAt: notifications.createdAt })
    .from(notifications)
    .where(and(eq(notifications.tenantId, tenantId), inArray(notifications.id, [...ids])))
    .orderBy(asc(notifications.createdAt), asc(notifications.id))
    .all()
}
