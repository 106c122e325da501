import { and, eq, ne, sql } from 'drizzle-orm'
import { sessions } from '../../../db/schema/sessions'
import { changesOf, preparedQuery, type DbOrTx } from '../../../db/client'

export type SessionRow = typeof sessions.$inferSelect

export async function insertSession(tx: DbOrTx, row: SessionRow): Promise<void> {
  await tx.insert(sessions).values(row).run()
}

const sessionByHash = preparedQuery((db) =>
  db
    .select()
    .from(sessions)
    .where(eq(sessions.tokenHash, sql.placeholder('hash')))
    .prepare(),
)

/** Every request with a session cookie asks: built once (preparedQuery). */
export async function findSessionByTokenHash(db: DbOrTx, tokenHash: string): Promise<SessionRow | undefined> {
  return await sessionByHash(db).get({ hash: tokenHash })
}

export async function touchSession(tx: DbOrTx, id: string, lastSeenAt: number, idleExpiresAt: number): Promise<void> {
  await tx.update(sessions).set({ lastSeenAt, idleExpiresAt }).where(eq(sessions.id, id)).run()
}

export async function deleteSession(tx: DbOrTx, id: string): Promise<void> {
  await tx.delete(sessions).where(eq(sessions.id, id)).run()
}

/** Ends every session of a user, except `keep` when given. */
export async function deleteUserSessions(tx: DbOrTx, userId: string, keep?: string): Promise<number> {
  const where = keep ? and(eq(sessions.userId, userId), ne(sessions.id, keep)) : eq(sessions.userId, userId)
  const r = await tx.delete(sessions).where(where).run()
  return changesOf(r)
}
