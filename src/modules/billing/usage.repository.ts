import { and, eq, gt, isNull, lt, or, sql } from 'drizzle-orm'
import { servers, users } from '../../../db/schema'
import type { DbOrTx } from '../../../db/client'

/**
 * What billing reads of other modules' tables: servers (fleet) and members' time zones (users).
 * Their front doors do not offer these reads yet; once fleet and users export them, these move there
 * (issue 15: a module never queries another module's tables). Read-only, and only here.
 */

/** Every (tenant, server) managed during some part of [from, to). */
export function serversManagedDuring(db: DbOrTx, fromUs: number, toUs: number): { tenantId: string; serverId: string }[] {
  return db
    .select({ tenantId: servers.tenantId, serverId: servers.id })
    .from(servers)
    .where(and(lt(servers.createdAt, toUs), or(isNull(servers.decommissionedAt), gt(servers.decommissionedAt, fromUs))))
    .all()
}

/** When the first server ever was enrolled; null before any. */
export function firstServerEnrolledAt(db: DbOrTx): number | null {
  const r = db
    .select({ t: sql<number | null>`min(${servers.createdAt})` })
    .from(servers)
    .get()
  return r?.t ?? null
}

export function serverNames(db: DbOrTx, tenantId: string): Map<string, string> {
  return new Map(
    db
      .select({ id: servers.id, name: servers.name })
      .from(servers)
      .where(eq(servers.tenantId, tenantId))
      .all()
      .map((s) => [s.id, s.name]),
  )
}

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
