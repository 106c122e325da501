import { and, eq, isNotNull, lt, or } from 'drizzle-orm'
import { captchaTokens, emailCodes, signinFailures, tickets } from '../../../db/schema/accounts'
import { changesOf, type DbOrTx } from '../../../db/client'

export type EmailCodeRow = typeof emailCodes.$inferSelect
export type TicketRow = typeof tickets.$inferSelect
export type Purpose = EmailCodeRow['purpose']

export async function findEmailCode(db: DbOrTx, purpose: Purpose, emailHash: string): Promise<EmailCodeRow | undefined> {
  return await db
    .select()
    .from(emailCodes)
    .where(and(eq(emailCodes.purpose, purpose), eq(emailCodes.emailHash, emailHash)))
    .get()
}

export async function upsertEmailCode(tx: DbOrTx, row: EmailCodeRow): Promise<void> {
  const { id: _id, purpose: _p, emailHash: _e, ...rest } = row
  await tx
    .insert(emailCodes)
    .values(row)
    .onConflictDoUpdate({ target: [emailCodes.purpose, emailCodes.emailHash], set: rest })
    .run()
}

export async function updateEmailCode(tx: DbOrTx, id: string, patch: Partial<EmailCodeRow>): Promise<void> {
  await tx.update(emailCodes).set(patch).where(eq(emailCodes.id, id)).run()
}

export async function insertTicket(tx: DbOrTx, row: TicketRow): Promise<void> {
  await tx.insert(tickets).values(row).run()
}

export async function findTicket(db: DbOrTx, tokenHash: string): Promise<TicketRow | undefined> {
  return await db.select().from(tickets).where(eq(tickets.tokenHash, tokenHash)).get()
}

export async function markTicketConsumed(tx: DbOrTx, id: string, at: number): Promise<void> {
  await tx.update(tickets).set({ consumedAt: at }).where(eq(tickets.id, id)).run()
}

export async function findSigninFailures(db: DbOrTx, key: string) {
  return await db.select().from(signinFailures).where(eq(signinFailures.key, key)).get()
}

export async function saveSigninFailures(tx: DbOrTx, row: typeof signinFailures.$inferSelect): Promise<void> {
  await tx
    .insert(signinFailures)
    .values(row)
    .onConflictDoUpdate({ target: signinFailures.key, set: { failures: row.failures, blockedUntil: row.blockedUntil, updatedAt: row.updatedAt } })
    .run()
}

export async function clearSigninFailures(tx: DbOrTx, key: string): Promise<void> {
  await tx.delete(signinFailures).where(eq(signinFailures.key, key)).run()
}

/** Deletes codes, tickets, captcha tokens and sign-in failure records that stopped mattering before `before`; returns how many. */
export async function deleteAuthLeftovers(tx: DbOrTx, before: number): Promise<number> {
  const codes = changesOf(await tx.delete(emailCodes).where(lt(emailCodes.expiresAt, before)).run())
  const spentTickets = changesOf(
    await tx
      .delete(tickets)
      .where(or(lt(tickets.expiresAt, before), and(isNotNull(tickets.consumedAt), lt(tickets.consumedAt, before))))
      .run(),
  )
  const captchas = changesOf(await tx.delete(captchaTokens).where(lt(captchaTokens.usedAt, before)).run())
  const failures = changesOf(
    await tx
      .delete(signinFailures)
      .where(and(lt(signinFailures.updatedAt, before), lt(signinFailures.blockedUntil, before)))
      .run(),
  )
  return codes + spentTickets + captchas + failures
}

/** Marks a captcha token spent; false when it was spent before (a token is single-use). */
export async function spendCaptchaToken(tx: DbOrTx, tokenHash: string, nowUs: number): Promise<boolean> {
  return changesOf(await tx.insert(captchaTokens).values({ tokenHash, usedAt: nowUs }).onConflictDoNothing().run()) === 1
}
