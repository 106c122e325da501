import { and, eq, isNotNull, lt, or } from 'drizzle-orm'
import { captchaTokens, emailCodes, signinFailures, tickets } from '../../../db/schema/accounts'
import { changesOf, type DbOrTx } from '../../../db/client'

export type EmailCodeRow = typeof emailCodes.$inferSelect
export type TicketRow = typeof tickets.$inferSelect
export type Purpose = EmailCodeRow['purpose']

export function findEmailCode(db: DbOrTx, purpose: Purpose, emailHash: string): EmailCodeRow | undefined {
  return db
    .select()
    .from(emailCodes)
    .where(and(eq(emailCodes.purpose, purpose), eq(emailCodes.emailHash, emailHash)))
    .get()
}

export function upsertEmailCode(tx: DbOrTx, row: EmailCodeRow): void {
  const { id: _id, purpose: _p, emailHash: _e, ...rest } = row
  tx.insert(emailCodes)
    .values(row)
    .onConflictDoUpdate({ target: [emailCodes.purpose, emailCodes.emailHash], set: rest })
    .run()
}

export function updateEmailCode(tx: DbOrTx, id: string, patch: Partial<EmailCodeRow>): void {
  tx.update(emailCodes).set(patch).where(eq(emailCodes.id, id)).run()
}

export function insertTicket(tx: DbOrTx, row: TicketRow): void {
  tx.insert(tickets).values(row).run()
}

export function findTicket(db: DbOrTx, tokenHash: string): TicketRow | undefined {
  return db.select().from(tickets).where(eq(tickets.tokenHash, tokenHash)).get()
}

export function markTicketConsumed(tx: DbOrTx, id: string, at: number): void {
  tx.update(tickets).set({ consumedAt: at }).where(eq(tickets.id, id)).run()
}

export function findSigninFailures(db: DbOrTx, key: string) {
  return db.select().from(signinFailures).where(eq(signinFailures.key, key)).get()
}

export function saveSigninFailures(tx: DbOrTx, row: typeof signinFailures.$inferSelect): void {
  tx.insert(signinFailures)
    .values(row)
    .onConflictDoUpdate({ target: signinFailures.key, set: { failures: row.failures, blockedUntil: row.blockedUntil, updatedAt: row.updatedAt } })
    .run()
}

export function clearSigninFailures(tx: DbOrTx, key: string): void {
  tx.delete(signinFailures).where(eq(signinFailures.key, key)).run()
}

/** Deletes codes, tickets, captcha tokens and sign-in failure records that stopped mattering before `before`; returns how many. */
export function deleteAuthLeftovers(tx: DbOrTx, before: number): number {
  return (
    changesOf(tx.delete(emailCodes).where(lt(emailCodes.expiresAt, before)).run()) +
    changesOf(
      tx
        .delete(tickets)
        .where(or(lt(tickets.expiresAt, before), and(isNotNull(tickets.consumedAt), lt(tickets.consumedAt, before))))
        .run(),
    ) +
    changesOf(tx.delete(captchaTokens).where(lt(captchaTokens.usedAt, before)).run()) +
    changesOf(
      tx
        .delete(signinFailures)
        .where(and(lt(signinFailures.updatedAt, before), lt(signinFailures.blockedUntil, before)))
        .run(),
    )
  )
}

/** Marks a captcha token spent; false when it was spent before (a token is single-use). */
export function spendCaptchaToken(tx: DbOrTx, tokenHash: string, nowUs: number): boolean {
  return changesOf(tx.insert(captchaTokens).values({ tokenHash, usedAt: nowUs }).onConflictDoNothing().run()) === 1
}
