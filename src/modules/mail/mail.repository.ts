import { and, asc, eq, lte } from 'drizzle-orm'
import { mailOutbox } from '../../../db/schema/mail'
import type { DbOrTx } from '../../../db/client'

export type OutboxRow = typeof mailOutbox.$inferSelect

/** A message's words are forgotten once it leaves the queue: they may hold a sign-in code. */
const forgottenWords = (template: string) => ({ subject: `[${template}]`, text: '', html: '', sealedBody: null })

export async function insertOutboxMessage(tx: DbOrTx, row: typeof mailOutbox.$inferInsert): Promise<void> {
  await tx.insert(mailOutbox).values(row).run()
}

/** The pending message due first, claimed: its next attempt pushed to `claimUntil` and counted. */
export async function claimDueMessage(tx: DbOrTx, now: number, claimUntil: number): Promise<OutboxRow | null> {
  const due = await tx
    .select()
    .from(mailOutbox)
    .where(and(eq(mailOutbox.status, 'pending'), lte(mailOutbox.nextAttemptAt, now)))
    .orderBy(asc(mailOutbox.nextAttemptAt))
    .limit(1)
    .get()
  if (!due) return null
  await tx
    .update(mailOutbox)
    .set({ nextAttemptAt: claimUntil, attempts: due.attempts + 1 })
    .where(eq(mailOutbox.id, due.id))
    .run()
  return { ...due, attempts: due.attempts + 1 }
}

export async function markMessageSent(tx: DbOrTx, id: string, template: string, at: number): Promise<void> {
  await tx
    .update(mailOutbox)
    .set({ status: 'sent', sentAt: at, lastError: null, ...forgottenWords(template) })
    .where(eq(mailOutbox.id, id))
    .run()
}

export async function markMessageFailed(tx: DbOrTx, id: string, patch: { failed: boolean; error: string; nextAttemptAt: number }): Promise<void> {
  await tx
    .update(mailOutbox)
    .set({ status: patch.failed ? 'failed' : 'pending', lastError: patch.error, nextAttemptAt: patch.nextAttemptAt })
    .where(eq(mailOutbox.id, id))
    .run()
}

/** Marks pending messages whose code expired as dropped and forgets their words; returns them. */
export async function dropExpiredMessages(tx: DbOrTx, now: number, reason: string): Promise<{ id: string; template: string }[]> {
  const due = await tx
    .select({ id: mailOutbox.id, template: mailOutbox.template })
    .from(mailOutbox)
    .where(and(eq(mailOutbox.status, 'pending'), lte(mailOutbox.expiresAt, now)))
    .all()
  for (const m of due)
    await tx
      .update(mailOutbox)
      .set({ status: 'dropped', ...forgottenWords(m.template), lastError: reason })
      .where(eq(mailOutbox.id, m.id))
      .run()
  return due
}
