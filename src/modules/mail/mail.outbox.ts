import { and, asc, eq, lte } from 'drizzle-orm'
import { mailOutbox } from '../../../db/schema'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Clock } from '../../platform/clock'
import type { Logger } from '../../platform/logger'
import type { MailTransport } from './mail.transport'

export type MailMessage = { to: string; subject: string; text: string; html: string; template: string }

/** Queues a message inside the caller's transaction; it is sent only if that transaction commits. */
export function enqueueMail(tx: DbOrTx, ctx: { newId: () => string; clock: Clock }, message: MailMessage): string {
  const id = ctx.newId()
  const now = ctx.clock.nowUs()
  withTransaction(tx, (t) =>
    t.insert(mailOutbox).values({ id, ...message, status: 'pending', attempts: 0, nextAttemptAt: now, createdAt: now }).run(),
  )
  return id
}

const MAX_ATTEMPTS = 10
const CLAIM_SECONDS = 120

/** Seconds before attempt n+1: 30 s doubling, at most an hour. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(3600, 30 * 2 ** Math.max(0, attempts - 1))
}

/**
 * Sends every due message once. Each message is claimed (its next attempt pushed past the send)
 * before it is sent, so two processes never send the same one; a failure schedules a retry with
 * backoff, and after 10 attempts the message is marked failed.
 */
export class MailDispatcher {
  #running: Promise<number> | null = null
  #again = false

  constructor(
    private readonly ctx: { db: DbOrTx; clock: Clock; log: Logger },
    private readonly transport: MailTransport,
  ) {}

  /** Starts a dispatch soon, off the request path; calls during a run fold into one more run. */
  kick(): void {
    if (this.#running) {
      this.#again = true
      return
    }
    setTimeout(() => void this.dispatchDue().catch((e) => this.ctx.log.error('mail dispatch failed', { error: e })), 0)
  }

  async dispatchDue(): Promise<number> {
    if (this.#running) {
      this.#again = true
      return this.#running
    }
    this.#running = this.#dispatch()
    try {
      return await this.#running
    } finally {
      this.#running = null
      if (this.#again) {
        this.#again = false
        this.kick()
      }
    }
  }

  /** Waits for any dispatch in flight (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running.catch(() => 0)
  }

  async #dispatch(): Promise<number> {
    const { db, clock, log } = this.ctx
    let sent = 0
    for (;;) {
      const now = clock.nowUs()
      const row = withTransaction(db, (tx) => {
        const due = tx
          .select()
          .from(mailOutbox)
          .where(and(eq(mailOutbox.status, 'pending'), lte(mailOutbox.nextAttemptAt, now)))
          .orderBy(asc(mailOutbox.nextAttemptAt))
          .limit(1)
          .get()
        if (!due) return null
        tx.update(mailOutbox)
          .set({ nextAttemptAt: now + CLAIM_SECONDS * 1_000_000, attempts: due.attempts + 1 })
          .where(eq(mailOutbox.id, due.id))
          .run()
        return { ...due, attempts: due.attempts + 1 }
      })
      if (!row) return sent
      try {
        await this.transport.send(row)
        // A sent message's words are not kept: they may hold a sign-in code.
        withTransaction(db, (tx) =>
          tx.update(mailOutbox).set({ status: 'sent', sentAt: clock.nowUs(), lastError: null, subject: `[${row.template}]`, text: '', html: '' }).where(eq(mailOutbox.id, row.id)).run(),
        )
        sent++
      } catch (e) {
        const error = e instanceof Error ? e.message : String(e)
        const failed = row.attempts >= MAX_ATTEMPTS
        withTransaction(db, (tx) =>
          tx
            .update(mailOutbox)
            .set({
              status: failed ? 'failed' : 'pending',
              lastError: error.slice(0, 512),
              nextAttemptAt: clock.nowUs() + retryDelaySeconds(row.attempts) * 1_000_000,
            })
            .where(eq(mailOutbox.id, row.id))
            .run(),
        )
        log.warn('mail delivery failed', { mail_id: row.id, attempts: row.attempts, will_retry: !failed, error })
        // Leave the rest for the next run: the mail server is probably down.
        return sent
      }
    }
  }
}
