import { asc, eq } from 'drizzle-orm'
import { tenants } from '../../../db/schema'
import type { DbOrTx } from '../../../db/client'

export type TenantRow = typeof tenants.$inferSelect

export function insertTenant(tx: DbOrTx, row: typeof tenants.$inferInsert): void {
  tx.insert(tenants).values(row).run()
}

export function findTenant(db: DbOrTx, id: string): TenantRow | undefined {
  return db.select().from(tenants).where(eq(tenants.id, id)).get()
}

export function listTenants(db: DbOrTx): TenantRow[] {
  return db.select().from(tenants).orderBy(asc(tenants.createdAt)).all()
}
