import { and, eq } from 'drizzle-orm'
import { users } from '../../../db/schema'
import type { DbOrTx } from '../../../db/client'

/**
 * What billing reads of another module's table: members' time zones (users). The users front door
 * does not offer this read yet; once it does, this file goes (a module never queries another
 * module's tables). Read-only, and only here.
 */

/** A member's time zone, else the owner's, else undefined. */
export function memberTimezone(db: DbOrTx, tenantId: string, userId: string | null): string | undefined {
  const row = userId ? db.select({ tz: users.timezone }).from(users).where(eq(users.id, userId)).get() : undefined
  if (row) return row.tz
  return db
    .select({ tz: users.timezone })
    .from(users)
    .where(and(eq(users.tenantId, tenantId), eq(users.role, 'owner')))
    .get()?.tz
}
