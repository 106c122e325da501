import { and, desc, eq, gt, isNull, lt, or, sql } from 'drizzle-orm'
import { accessTokens, initTokens } from '../../../db/schema/tokens'
import { changesOf, preparedQuery, type DbOrTx } from '../../../db/client'

export type AccessTokenRow = typeof accessTokens.$inferSelect
export type InitTokenRow = typeof initTokens.$inferSelect

export async function insertAccessToken(tx: DbOrTx, row: AccessTokenRow): Promise<void> {
  await tx.insert(accessTokens).values(row).run()
}

/** The token by the hash of its plaintext. */
const accessTokenByHash = preparedQuery((db) =>
  db
    .select()
    .from(accessTokens)
    .where(eq(accessTokens.tokenHash, sql.placeholder('hash')))
    .prepare(),
)

/** The token by the hash of its plaintext; every PAT request asks: built once (preparedQuery). */
export async function findAccessTokenByHash(db: DbOrTx, tokenHash: string): Promise<AccessTokenRow | undefined> {
  return await accessTokenByHash(db).get({ hash: tokenHash })
}

export async function touchAccessToken(tx: DbOrTx, id: string, at: number): Promise<void> {
  await tx.update(accessTokens).set({ lastUsedAt: at }).where(eq(accessTokens.id, id)).run()
}

/** Live tokens of a tenant (optionally one member's), newest first, before `beforeId` when paging. */
export async function listAccessTokens(db: DbOrTx, tenantId: string, userId: string | null, beforeId: string | null, limit: number): Promise<AccessTokenRow[]> {
  const where = [eq(accessTokens.tenantId, tenantId), isNull(accessTokens.revokedAt)]
  if (userId) where.push(eq(accessTokens.userId, userId))
  if (beforeId) where.push(lt(accessTokens.id, beforeId))
  return await db
    .select()
    .from(accessTokens)
    .where(and(...where))
    .orderBy(desc(accessTokens.id))
    .limit(limit)
    .all()
}

export async function findLiveAccessToken(db: DbOrTx, tenantId: string, id: string): Promise<AccessTokenRow | undefined> {
  return await db
    .select()
    .from(accessTokens)
    .where(and(eq(accessTokens.tenantId, tenantId), eq(accessTokens.id, id), isNull(accessTokens.revokedAt)))
    .get()
}

export async function revokeAccessToken(tx: DbOrTx, id: string, at: number): Promise<void> {
  await tx.update(accessTokens).set({ revokedAt: at }).where(eq(accessTokens.id, id)).run()
}

/** Unused, unexpired, unrevoked init tokens not bound to a server: each may still add one. */
export async function countOutstandingUnboundInitTokens(db: DbOrTx, tenantId: string, now: number): Promise<number> {
  const r = await db
    .select({ n: sql<number>`count(*)` })
    .from(initTokens)
    .where(
      and(
        eq(initTokens.tenantId, tenantId),
        isNull(initTokens.serverId),
        isNull(initTokens.claimedAt),
        isNull(initTokens.revokedAt),
        gt(initTokens.expiresAt, now),
      ),
    )
    .get()
  return Number(r?.n ?? 0)
}

export async function insertInitToken(tx: DbOrTx, row: InitTokenRow): Promise<void> {
  await tx.insert(initTokens).values(row).run()
}

/**
 * Claims an init token exactly once: a single conditional UPDATE, so of any number of concurrent
 * claims (in any number of processes) exactly one changes the row.
 */
export async function claimInitTokenRow(tx: DbOrTx, tokenHash: string, now: number): Promise<InitTokenRow | undefined> {
  const r = await tx
    .update(initTokens)
    .set({ claimedAt: now })
    .where(and(eq(initTokens.tokenHash, tokenHash), isNull(initTokens.claimedAt), isNull(initTokens.revokedAt), gt(initTokens.expiresAt, now)))
    .run()
  if (changesOf(r) !== 1) return undefined
  return await tx.select().from(initTokens).where(eq(initTokens.tokenHash, tokenHash)).get()
}

/** Revokes every other unused init token bound to the same server (one agent per server). */
export async function revokeSiblingInitTokens(tx: DbOrTx, serverId: string, keepId: string, now: number): Promise<void> {
  await tx
    .update(initTokens)
    .set({ revokedAt: now })
    .where(
      and(
        eq(initTokens.serverId, serverId),
        isNull(initTokens.claimedAt),
        isNull(initTokens.revokedAt),
        or(lt(initTokens.id, keepId), gt(initTokens.id, keepId)),
      ),
    )
    .run()
}

export async function setInitTokenServer(tx: DbOrTx, id: string, serverId: string): Promise<void> {
  await tx.update(initTokens).set({ claimedServerId: serverId }).where(eq(initTokens.id, id)).run()
}
