import { blob, index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * Outgoing mail, written in the transaction of the change that causes it and sent after commit by
 * the dispatcher (notifications.dispatch), with retries and backoff. A down mail server never fails
 * the request that queued the message. The words of a message (subject, text, html) are kept only
 * sealed in `sealed_body` (they may carry a sign-in code); `subject` holds `[template]` and `text`
 * and `html` stay empty. A message with `expires_at` (its code's expiry) is dropped, not sent, after it.
 */
export const mailOutbox = sqliteTable(
  'mail_outbox',
  {
    id: text('id').primaryKey(),
    to: text('to').notNull(),
    subject: text('subject').notNull(),
    text: text('text').notNull(),
    html: text('html').notNull(),
    /** What kind of message, for logs and tests (signup_code, signup_taken, reset_code, …). */
    template: text('template').notNull(),
    status: text('status', { enum: ['pending', 'sent', 'failed', 'dropped'] }).notNull(),
    attempts: integer('attempts').notNull(),
    nextAttemptAt: integer('next_attempt_at').notNull(),
    lastError: text('last_error'),
    createdAt: integer('created_at').notNull(),
    sentAt: integer('sent_at'),
    /** AES-GCM sealed JSON {subject, text, html} under a key derived from SECRET_KEY, bound to the id. */
    sealedBody: blob('sealed_body', { mode: 'buffer' }),
    /** When what the message carries (a code) stops working: after it the message is dropped. */
    expiresAt: integer('expires_at'),
  },
  (t) => [index('mail_outbox_due').on(t.status, t.nextAttemptAt)],
)
