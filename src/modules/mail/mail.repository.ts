import { and, asc, eq, lte } from 'drizzle-orm'
import { mailOutbox } from '../../../db/schema/mail'
import type { DbOrTx } from '../../../db/client'

export type OutboxRow = typeof mailOutbox.$inferSelect

/** A message's words are forgotten once it leaves the queue: they may hold a sign-in code. */
const forgottenWords = (template: string) => ({ subject: `[${template}]`, text: '', html: '', sealedBody: null })

export function insertOutboxMessage(tx: DbOrTx, row: typeof mailOutbox.$inferInsert): void {
  tx.insert(mailOutbox).values(row).run()
}

/** The pending message due first, claimed: its next attempt pushed to `claimUntil` and counted. */
export function claimDueMessage(tx: DbOrTx, now: number, claimUntil: number): OutboxRow | null {
  const due = tx
    .select()
    .from(mailOutbox)
    .where(and(eq(mailOutbox.status, 'pending'), lte(mailOutbox.nextAttemptAt, now)))
    .orderBy(asc(mailOutbox.nextAttemptAt))
    .limit(1)
    .get()
  if (!due) return null
  tx.update(mailOutbox)
    .set({ nextAttemptAt: claimUntil, attempts: due.attempts + 1 })
    .where(eq(mailOutbox.id, due.id))
    .run()
  return { ...due, attempts: due.attempts + 1 }
}

export function markMessageSent(tx: DbOrTx, id: string, template: string, at: number): void {
  tx.update(mailOutbox)
    .set({ status: 'sent', sentAt: at, lastError: null, ...forgottenWords(template) })
    .where(eq(mailOutbox.id, id))
    .run()
}

export function markMessageFailed(tx: DbOrTx, id: string, patch: { failed: boolean; error: string; nextAttemptAt: number }): void {
  tx.update(mailOutbox)
    .set({ status: patch.failed ? 'failed' : 'pending', lastError: patch.error, nextAttemptAt: patch.nextAttemptAt })
    .where(eq(mailOutbox.id, id))
    .run()
}

/** Marks pending messages whose code expired as dropped and forgets their words; returns them. */
export function dropExpiredMessages(tx: DbOrTx, now: number, reason: string): { id: string; template: string }[] {
  const due = tx
    .select({ id: mailOutbox.id, template: mailOutbox.template })
    .from(mailOutbox)
    .where(and(eq(mailOutbox.status, 'pending'), lte(mailOutbox.expiresAt, now)))
    .all()
  for (const m of due)
    tx.update(mailOutbox)
      .set({ status: 'dropped', ...forgottenWords(m.template), lastError: reason })
      .where(eq(mailOutbox.id, m.id))
      .run()
  return due
}
