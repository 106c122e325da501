import { and, asc, eq, gt, sql } from 'drizzle-orm'
import { users } from '../../../db/schema/users'
import { preparedQuery, type DbOrTx } from '../../../db/client'

export type UserRow = typeof users.$inferSelect

export async function insertUser(tx: DbOrTx, row: UserRow): Promise<void> {
  await tx.insert(users).values(row).run()
}

export async function findUserByEmail(db: DbOrTx, email: string): Promise<UserRow | undefined> {
  return await db.select().from(users).where(eq(users.email, email)).get()
}

const userById = preparedQuery((db) =>
  db
    .select()
    .from(users)
    .where(eq(users.id, sql.placeholder('id')))
    .prepare(),
)

/** Every authenticated request asks: built once (preparedQuery). */
export async function findUserById(db: DbOrTx, id: string): Promise<UserRow | undefined> {
  return await userById(db).get({ id })
}

/** Load-or-undefined within a tenant: a user of another tenant is simply not found. */
export async function findTenantUser(db: DbOrTx, tenantId: string, userId: string): Promise<UserRow | undefined> {
  return await db
    .select()
    .from(users)
    .where(and(eq(users.tenantId, tenantId), eq(users.id, userId)))
    .get()
}

export async function updateUser(tx: DbOrTx, tenantId: string, userId: string, patch: Partial<UserRow>): Promise<void> {
  await tx
    .update(users)
    .set(patch)
    .where(and(eq(users.tenantId, tenantId), eq(users.id, userId)))
    .run()
}

export async function setPassword(tx: DbOrTx, userId: string, passwordHash: string, updatedAt: number): Promise<void> {
  await tx.update(users).set({ passwordHash, updatedAt }).where(eq(users.id, userId)).run()
}

/** Members of a tenant in id (creation) order, after `afterId` when paging. */
export async function listTenantUsers(db: DbOrTx, tenantId: string, afterId: string | undefined, limit: number): Promise<UserRow[]> {
  const where = afterId ? and(eq(users.tenantId, tenantId), gt(users.id, afterId)) : eq(users.tenantId, tenantId)
  return await db.select().from(users).where(where).orderBy(asc(users.id)).limit(limit).all()
}

/** A member's time zone, else the tenant owner's, else undefined (billing's day boundaries). */
export async function memberTimezone(db: DbOrTx, tenantId: string, userId: string | null): Promise<string | undefined> {
  const own = userId ? await findTenantUser(db, tenantId, userId) : undefined
  if (own) return own.timezone
  const owner = await db
    .select({ tz: users.timezone })
    .from(users)
    .where(and(eq(users.tenantId, tenantId), eq(users.role, 'owner')))
    .get()
  return owner?.tz
}
