import { and, asc, eq, gt, sql } from 'drizzle-orm'
import { users } from '../../../db/schema/users'
import { preparedQuery, type DbOrTx } from '../../../db/client'

export type UserRow = typeof users.$inferSelect

export function insertUser(tx: DbOrTx, row: UserRow): void {
  tx.insert(users).values(row).run()
}

export function findUserByEmail(db: DbOrTx, email: string): UserRow | undefined {
  return db.select().from(users).where(eq(users.email, email)).get()
}

const userById = preparedQuery((db) =>
  db
    .select()
    .from(users)
    .where(eq(users.id, sql.placeholder('id')))
    .prepare(),
)

/** Every authenticated request asks: built once (preparedQuery). */
export function findUserById(db: DbOrTx, id: string): UserRow | undefined {
  return userById(db).get({ id })
}

/** Load-or-undefined within a tenant: a user of another tenant is simply not found. */
export function findTenantUser(db: DbOrTx, tenantId: string, userId: string): UserRow | undefined {
  return db
    .select()
    .from(users)
    .where(and(eq(users.tenantId, tenantId), eq(users.id, userId)))
    .get()
}

export function updateUser(tx: DbOrTx, tenantId: string, userId: string, patch: Partial<UserRow>): void {
  tx.update(users)
    .set(patch)
    .where(and(eq(users.tenantId, tenantId), eq(users.id, userId)))
    .run()
}

export function setPassword(tx: DbOrTx, userId: string, passwordHash: string, updatedAt: number): void {
  tx.update(users).set({ passwordHash, updatedAt }).where(eq(users.id, userId)).run()
}

/** Members of a tenant in id (creation) order, after `afterId` when paging. */
export function listTenantUsers(db: DbOrTx, tenantId: string, afterId: string | undefined, limit: number): UserRow[] {
  const where = afterId ? and(eq(users.tenantId, tenantId), gt(users.id, afterId)) : eq(users.tenantId, tenantId)
  return db.select().from(users).where(where).orderBy(asc(users.id)).limit(limit).all()
}

/** A member's time zone, else the tenant owner's, else undefined (billing's day boundaries). */
export function memberTimezone(db: DbOrTx, tenantId: string, userId: string | null): string | undefined {
  const own = userId ? findTenantUser(db, tenantId, userId) : undefined
  if (own) return own.timezone
  return db
    .select({ tz: users.timezone })
    .from(users)
    .where(and(eq(users.tenantId, tenantId), eq(users.role, 'owner')))
    .get()?.tz
}
