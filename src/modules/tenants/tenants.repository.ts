import { and, asc, eq, lt, sql } from 'drizzle-orm'
import { tenants } from '../../../db/schema/tenants'
import { preparedQuery, type DbOrTx } from '../../../db/client'

export type TenantRow = typeof tenants.$inferSelect
type AccountState = TenantRow['accountState']

export async function insertTenant(tx: DbOrTx, row: typeof tenants.$inferInsert): Promise<void> {
  await tx.insert(tenants).values(row).run()
}

const tenantById = preparedQuery((db) =>
  db
    .select()
    .from(tenants)
    .where(eq(tenants.id, sql.placeholder('id')))
    .prepare(),
)

/** Every authenticated request asks: built once (preparedQuery). */
export async function findTenant(db: DbOrTx, id: string): Promise<TenantRow | undefined> {
  return await tenantById(db).get({ id })
}

export async function listTenants(db: DbOrTx): Promise<TenantRow[]> {
  return await db.select().from(tenants).orderBy(asc(tenants.createdAt)).all()
}

export async function accountStateOf(db: DbOrTx, id: string): Promise<AccountState | undefined> {
  return (await db.select({ s: tenants.accountState }).from(tenants).where(eq(tenants.id, id)).get())?.s
}

/**
 * Moves the account state. GET /subscription shows the account state, so a state change moves the
 * subscription version (its ETag) on, in SQL so concurrent bumps never lose one.
 */
export async function setAccountState(
  tx: DbOrTx,
  id: string,
  change: { accountState: AccountState; graceSince?: number | null; frozenAt?: number | null },
): Promise<void> {
  await tx
    .update(tenants)
    .set({ ...change, subscriptionVersion: sql`${tenants.subscriptionVersion} + 1` })
    .where(eq(tenants.id, id))
    .run()
}

/** Tenants in grace since before `cutoff`. */
export async function tenantsInGraceBefore(db: DbOrTx, cutoff: number): Promise<TenantRow[]> {
  return await db
    .select()
    .from(tenants)
    .where(and(eq(tenants.accountState, 'grace'), lt(tenants.graceSince, cutoff)))
    .all()
}

export async function setTenantPlanCode(tx: DbOrTx, id: string, planCode: string | null): Promise<void> {
  await tx.update(tenants).set({ planCode }).where(eq(tenants.id, id)).run()
}

export async function setSubscriptionVersion(tx: DbOrTx, id: string, version: number): Promise<void> {
  await tx.update(tenants).set({ subscriptionVersion: version }).where(eq(tenants.id, id)).run()
}

/** Every tenant's current plan code. */
export async function tenantPlanCodes(db: DbOrTx): Promise<{ id: string; planCode: string | null }[]> {
  return await db.select({ id: tenants.id, planCode: tenants.planCode }).from(tenants).all()
}
