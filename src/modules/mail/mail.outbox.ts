import { afterCommit, withTransaction, type DbOrTx } from '../../../db/client'
import type { Durability } from '../../../db/durability'
import type { Clock } from '../../platform/clock'
import type { Logger } from '../../platform/logger'
import { open, seal } from '../../platform/secrets'
import { claimDueMessage, dropExpiredMessages, insertOutboxMessage, markMessageFailed, markMessageSent, type OutboxRow } from './mail.repository'
import type { MailTransport } from './mail.transport'

/** `validForSeconds`: how long what the message carries (a code) works; it is not sent after that. */
export type MailMessage = { to: string; subject: string; text: string; html: string; template: string; validForSeconds?: number }
type Words = Pick<MailMessage, 'subject' | 'text' | 'html'>

/** The words are sealed under the mail key and bound to the row's id (a box cannot be moved to another row). */
const sealWords = (key: Buffer, id: string, w: Words) => seal(key, JSON.stringify({ subject: w.subject, text: w.text, html: w.html }), `mail:${id}`)
function wordsOf(key: Buffer, row: OutboxRow): Words {
  // Rows queued before the words were sealed (an upgrade with mail waiting) still carry them in clear.
  if (!row.sealedBody) return { subject: row.subject, text: row.text, html: row.html }
  return JSON.parse(open(key, row.sealedBody, `mail:${row.id}`).toString('utf8')) as Words
}

/**
 * Queues a message inside the caller's transaction; it is sent only if that transaction commits.
 * Nothing readable of its words is stored: they may hold a sign-in code while the mail server is down.
 */
export async function enqueueMail(tx: DbOrTx, ctx: { newId: () => string; clock: Clock; keys: { mail: Buffer } }, message: MailMessage): Promise<string> {
  const id = ctx.newId()
  const now = ctx.clock.nowUs()
  const expiresAt = message.validForSeconds === undefined ? null : now + message.validForSeconds * 1_000_000
  await withTransaction(tx, (t) =>
    insertOutboxMessage(t, {
      id,
      to: message.to,
      template: message.template,
      subject: `[${message.template}]`,
      text: '',
      html: '',
      sealedBody: sealWords(ctx.keys.mail, id, message),
      expiresAt,
      status: 'pending',
      attempts: 0,
      nextAttemptAt: now,
      createdAt: now,
    }),
  )
  return id
}

const MAX_ATTEMPTS = 10
const EXPIRED_REASON = 'its code expired before it could be sent'
const CLAIM_SECONDS = 120

/** Seconds before attempt n+1: 30 s doubling, at most an hour. */
function retryDelaySeconds(attempts: number): number {
  return Math.min(3600, 30 * 2 ** Math.max(0, attempts - 1))
}

/**
 * Sends every due message once. Each message is claimed (its next attempt pushed past the send)
 * before it is sent, so two processes never send the same one; a failure schedules a retry with
 * backoff, and after 10 attempts the message is marked failed. A message whose code has expired is
 * marked dropped instead of sent: it could only confuse, and its words are forgotten.
 */
export class MailDispatcher {
  #running: Promise<number> | null = null
  #again = false

  constructor(
    private readonly ctx: { db: DbOrTx; clock: Clock; log: Logger; key: Buffer; durable: Durability },
    private readonly transport: MailTransport,
  ) {}

  /** Starts a dispatch soon, off the request path; calls during a run fold into one more run. */
  kick(): void {
    if (this.#running !== null) {
      this.#again = true
      return
    }
    // After the commit of the transaction the caller may be in (its queued mail is then there to
    // send), and outside it: a timer set inside would inherit the transaction's context.
    afterCommit(this.ctx.db, () => {
      setTimeout(() => void this.dispatchDue().catch((e) => this.ctx.log.error('mail dispatch failed', { error: e })), 0)
    })
  }

  async dispatchDue(): Promise<number> {
    // A call during a run (a kick's, after a commit) waits for it and then runs itself, so what
    // became due meanwhile goes now; it answers what went out while it waited and what it sent.
    let meanwhile = 0
    while (this.#running !== null) meanwhile += await this.#running.catch(() => 0)
    this.#running = this.#dispatch()
    try {
      return meanwhile + (await this.#running)
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
    while (this.#running !== null) await this.#running.catch(() => 0)
  }

  async #dispatch(): Promise<number> {
    const { db, clock, log, key } = this.ctx
    let sent = 0
    for (;;) {
      const now = clock.nowUs()
      await this.#dropExpired(now)
      const row = await withTransaction(db, (tx) => claimDueMessage(tx, now, now + CLAIM_SECONDS * 1_000_000))
      if (!row) return sent
      try {
        // A message about a write goes out only once that write is on disk (db/durability.ts).
        await this.ctx.durable.barrier()
        await this.transport.send({ id: row.id, to: row.to, ...wordsOf(key, row) })
        // A sent message's words are not kept: they may hold a sign-in code.
        await withTransaction(db, (tx) => markMessageSent(tx, row.id, row.template, clock.nowUs()))
        sent++
      } catch (e) {
        const error = e instanceof Error ? e.message : String(e)
        const failed = row.attempts >= MAX_ATTEMPTS
        await withTransaction(db, (tx) =>
          markMessageFailed(tx, row.id, { failed, error: error.slice(0, 512), nextAttemptAt: clock.nowUs() + retryDelaySeconds(row.attempts) * 1_000_000 }),
        )
        log.warn('mail delivery failed', { mail_id: row.id, attempts: row.attempts, will_retry: !failed, error })
        // Leave the rest for the next run: the mail server is probably down.
        return sent
      }
    }
  }

  /** Marks pending messages whose code expired as dropped (never sent) and forgets their words. */
  async #dropExpired(now: number): Promise<void> {
    const { db, log } = this.ctx
    const dropped = await withTransaction(db, (tx) => dropExpiredMessages(tx, now, EXPIRED_REASON))
    for (const m of dropped) log.info(`mail dropped: ${EXPIRED_REASON}`, { mail_id: m.id, template: m.template })
  }
}
