import { and, asc, eq, lt, sql } from 'drizzle-orm'
import { tenants } from '../../../db/schema/tenants'
import { preparedQuery, type DbOrTx } from '../../../db/client'

export type TenantRow = typeof tenants.$inferSelect
type AccountState = TenantRow['accountState']

export function insertTenant(tx: DbOrTx, row: typeof tenants.$inferInsert): void {
  tx.insert(tenants).values(row).run()
}

const tenantById = preparedQuery((db) =>
  db
    .select()
    .from(tenants)
    .where(eq(tenants.id, sql.placeholder('id')))
    .prepare(),
)

/** Every authenticated request asks: built once (preparedQuery). */
export function findTenant(db: DbOrTx, id: string): TenantRow | undefined {
  return tenantById(db).get({ id })
}

export function listTenants(db: DbOrTx): TenantRow[] {
  return db.select().from(tenants).orderBy(asc(tenants.createdAt)).all()
}

export function accountStateOf(db: DbOrTx, id: string): AccountState | undefined {
  return db.select({ s: tenants.accountState }).from(tenants).where(eq(tenants.id, id)).get()?.s
}

/**
 * Moves the account state. GET /subscription shows the account state, so a state change moves the
 * subscription version (its ETag) on, in SQL so concurrent bumps never lose one.
 */
export function setAccountState(tx: DbOrTx, id: string, change: { accountState: AccountState; graceSince?: number | null; frozenAt?: number | null }): void {
  tx.update(tenants)
    .set({ ...change, subscriptionVersion: sql`${tenants.subscriptionVersion} + 1` })
    .where(eq(tenants.id, id))
    .run()
}

/** Tenants in grace since before `cutoff`. */
export function tenantsInGraceBefore(db: DbOrTx, cutoff: number): TenantRow[] {
  return db
    .select()
    .from(tenants)
    .where(and(eq(tenants.accountState, 'grace'), lt(tenants.graceSince, cutoff)))
    .all()
}

export function setTenantPlanCode(tx: DbOrTx, id: string, planCode: string | null): void {
  tx.update(tenants).set({ planCode }).where(eq(tenants.id, id)).run()
}

export function setSubscriptionVersion(tx: DbOrTx, id: string, version: number): void {
  tx.update(tenants).set({ subscriptionVersion: version }).where(eq(tenants.id, id)).run()
}

/** Every tenant's current plan code. */
export function tenantPlanCodes(db: DbOrTx): { id: string; planCode: string | null }[] {
  return db.select({ id: tenants.id, planCode: tenants.planCode }).from(tenants).all()
}
