import { and, asc, desc, eq, gte, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm'
import { notificationAttempts, notificationDeliveries, notifications } from '../../../db/schema/notifications'
import { rawSql, type DbOrTx } from '../../../db/client'

export type NotificationRow = typeof notifications.$inferSelect
export type DeliveryRow = typeof notificationDeliveries.$inferSelect
export type AttemptRow = typeof notificationAttempts.$inferSelect

export async function insertNotification(tx: DbOrTx, row: NotificationRow): Promise<void> {
  await tx.insert(notifications).values(row).run()
}

export async function insertDelivery(tx: DbOrTx, row: DeliveryRow): Promise<void> {
  await tx.insert(notificationDeliveries).values(row).run()
}

/** The latest notification of the group since `sinceUs`, if any (grouping repeats). */
export async function recentInGroup(db: DbOrTx, tenantId: string, groupKey: string, sinceUs: number): Promise<NotificationRow | undefined> {
  return await db
    .select()
    .from(notifications)
    .where(and(eq(notifications.tenantId, tenantId), eq(notifications.groupKey, groupKey), gte(notifications.createdAt, sinceUs)))
    .orderBy(desc(notifications.createdAt))
    .limit(1)
    .get()
}

/**
 * Per group key among `groupKeys`, the time of the tenant's latest notification of the group since
 * `sinceUs` (keys with none are absent): recentInGroup for several groups in one read per
 * KEYS_PER_READ of them.
 */
export async function latestInGroups(db: DbOrTx, tenantId: string, groupKeys: readonly string[], sinceUs: number): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  for (let i = 0; i < groupKeys.length; i += KEYS_PER_READ)
    for (const r of await db
      .select({ groupKey: notifications.groupKey, at: sql<number>`max(${notifications.createdAt})` })
      .from(notifications)
      .where(
        and(
          eq(notifications.tenantId, tenantId),
          inArray(notifications.groupKey, groupKeys.slice(i, i + KEYS_PER_READ)),
          gte(notifications.createdAt, sinceUs),
        ),
      )
      .groupBy(notifications.groupKey)
      .all())
      out.set(r.groupKey!, Number(r.at))
  return out
}

/**
 * Rows per multi-row INSERT of insertNotifications and insertDeliveries (at most 14 values each:
 * well under both databases' parameter limits): the largest of these that fit, so the statements
 * have a handful of shapes, each compiled once.
 */
const ROWS_PER_INSERT = [256, 64, 16, 4, 1]

/** `rows` (each `columns.length` values) into `table`, in a few multi-row statements written out. */
async function insertRows(tx: DbOrTx, table: string, columns: readonly string[], rows: readonly unknown[][]): Promise<void> {
  for (let i = 0; i < rows.length; ) {
    const size = ROWS_PER_INSERT.find((n) => n <= rows.length - i)!
    const params: unknown[] = []
    const tuples: string[] = []
    for (const r of rows.slice(i, i + size)) {
      const n = params.length
      params.push(...r)
      tuples.push(`(${r.map((_, k) => `$${n + k + 1}`).join(', ')})`)
    }
    await rawSql(tx).run(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${tuples.join(', ')}`, ...params)
    i += size
  }
}

/** Several notifications, as insertNotification one after the other. */
export async function insertNotifications(tx: DbOrTx, rows: readonly NotificationRow[]): Promise<void> {
  await insertRows(
    tx,
    'notifications',
    ['id', 'tenant_id', 'category', 'title', 'body', 'critical', 'group_key', 'created_at'],
    rows.map((r) => [r.id, r.tenantId, r.category, r.title, r.body, r.critical ? 1 : 0, r.groupKey, r.createdAt]),
  )
}

/** Several deliveries, as insertDelivery one after the other. */
export async function insertDeliveries(tx: DbOrTx, rows: readonly DeliveryRow[]): Promise<void> {
  await insertRows(
    tx,
    'notification_deliveries',
    [
      'id',
      'notification_id',
      'tenant_id',
      'channel',
      'destination',
      'status',
      'attempts',
      'next_attempt_at',
      'claimed_until',
      'last_error',
      'sent_at',
      'created_at',
      'updated_at',
    ],
    rows.map((r) => [
      r.id,
      r.notificationId,
      r.tenantId,
      r.channel,
      r.destination,
      r.status,
      r.attempts,
      r.nextAttemptAt,
      r.claimedUntil,
      r.lastError,
      r.sentAt,
      r.createdAt,
      r.updatedAt,
    ]),
  )
}

/** Claims the oldest due delivery (queued, due, not claimed by a live claim) until `claimUntil`. */
export async function claimDue(tx: DbOrTx, now: number, claimUntil: number): Promise<DeliveryRow | undefined> {
  const row = await tx
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
  await tx.update(notificationDeliveries).set({ claimedUntil: claimUntil }).where(eq(notificationDeliveries.id, row.id)).run()
  return { ...row, claimedUntil: claimUntil }
}

export async function updateDelivery(tx: DbOrTx, id: string, patch: Partial<DeliveryRow>): Promise<void> {
  await tx.update(notificationDeliveries).set(patch).where(eq(notificationDeliveries.id, id)).run()
}

export async function insertAttempt(tx: DbOrTx, row: AttemptRow): Promise<void> {
  await tx.insert(notificationAttempts).values(row).run()
}

export async function findNotification(db: DbOrTx, id: string): Promise<NotificationRow | undefined> {
  return await db.select().from(notifications).where(eq(notifications.id, id)).get()
}

export async function findDelivery(db: DbOrTx, tenantId: string, id: string): Promise<DeliveryRow | undefined> {
  return await db
    .select()
    .from(notificationDeliveries)
    .where(and(eq(notificationDeliveries.tenantId, tenantId), eq(notificationDeliveries.id, id)))
    .get()
}

export async function attemptsOf(db: DbOrTx, deliveryId: string): Promise<AttemptRow[]> {
  return await db.select().from(notificationAttempts).where(eq(notificationAttempts.deliveryId, deliveryId)).orderBy(asc(notificationAttempts.at)).all()
}

/** Newest first; ids are time-ordered. */
export async function notificationsOf(db: DbOrTx, tenantId: string, beforeId: string | undefined, take: number): Promise<NotificationRow[]> {
  const where = [eq(notifications.tenantId, tenantId)]
  if (beforeId) where.push(lt(notifications.id, beforeId))
  return await db
    .select()
    .from(notifications)
    .where(and(...where))
    .orderBy(desc(notifications.id))
    .limit(take)
    .all()
}

export async function deliveriesOf(db: DbOrTx, notificationIds: string[]): Promise<DeliveryRow[]> {
  if (!notificationIds.length) return []
  return await db
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
export async function notificationsInGroups(
  db: DbOrTx,
  tenantId: string,
  groups: { keys: readonly string[]; prefixes: readonly string[] },
  fromUs: number,
  toUs: number,
): Promise<NotificationSummary[]> {
  const match = [
    ...(groups.keys.length ? [inArray(notifications.groupKey, [...groups.keys])] : []),
    // substr, not LIKE: a group key may hold `_`, which LIKE would read as a wildcard.
    ...groups.prefixes.map((p) => sql`substr(${notifications.groupKey}, 1, ${p.length}) = ${p}`),
  ]
  if (!match.length) return []
  return await db
    .select({ id: notifications.id, category: notifications.category, title: notifications.title, createdAt: notifications.createdAt })
    .from(notifications)
    .where(and(eq(notifications.tenantId, tenantId), gte(notifications.createdAt, fromUs), lte(notifications.createdAt, toUs), or(...match)))
    .orderBy(asc(notifications.createdAt), asc(notifications.id))
    .all()
}

/** Group keys per statement of notificationsOfGroupKeys (well under both databases' parameter limits). */
const KEYS_PER_READ = 500

/**
 * The tenant's notifications whose group key is one of `keys`, created in [fromUs, toUs], oldest
 * first, each with its group key: what several conditions produced, read at once (an alert batch).
 */
export async function notificationsOfGroupKeys(
  db: DbOrTx,
  tenantId: string,
  keys: readonly string[],
  fromUs: number,
  toUs: number,
): Promise<(NotificationSummary & { groupKey: string })[]> {
  const out: (NotificationSummary & { groupKey: string })[] = []
  for (let i = 0; i < keys.length; i += KEYS_PER_READ) {
    const rows = await db
      .select({
        id: notifications.id,
        category: notifications.category,
        title: notifications.title,
        createdAt: notifications.createdAt,
        groupKey: notifications.groupKey,
      })
      .from(notifications)
      .where(
        and(
          eq(notifications.tenantId, tenantId),
          inArray(notifications.groupKey, keys.slice(i, i + KEYS_PER_READ)),
          gte(notifications.createdAt, fromUs),
          lte(notifications.createdAt, toUs),
        ),
      )
      .all()
    for (const r of rows) out.push({ ...r, groupKey: r.groupKey! })
  }
  return out.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

/** The tenant's notifications among `ids`, oldest first (another tenant's ids match nothing). */
export async function notificationSummaries(db: DbOrTx, tenantId: string, ids: readonly string[]): Promise<NotificationSummary[]> {
  if (!ids.length) return []
  return await db
    .select({ id: notifications.id, category: notifications.category, title: notifications.title, createdAt: notifications.createdAt })
    .from(notifications)
    .where(and(eq(notifications.tenantId, tenantId), inArray(notifications.id, [...ids])))
    .orderBy(asc(notifications.createdAt), asc(notifications.id))
    .all()
}
