import { integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

// Tenants, their members and how members sign in. Times are integer microseconds.

/**
 * Emailed 6-digit codes, one live row per (purpose, email). `inert` rows stand for an email that
 * must get no code (signup of a taken address, reset of an unknown one): they keep the cooldown
 * and every answer identical while no code can ever match them.
 */
export const emailCodes = sqliteTable(
  'email_codes',
  {
    id: text('id').primaryKey(),
    purpose: text('purpose', { enum: ['signup', 'reset'] }).notNull(),
    emailHash: text('email_hash').notNull(),
    email: text('email').notNull(),
    tenantName: text('tenant_name'),
    userId: text('user_id'),
    codeHash: text('code_hash'),
    inert: integer('inert', { mode: 'boolean' }).notNull(),
    attempts: integer('attempts').notNull(),
    expiresAt: integer('expires_at').notNull(),
    lastSentAt: integer('last_sent_at').notNull(),
    consumedAt: integer('consumed_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('email_codes_purpose_email').on(t.purpose, t.emailHash)],
)

/** Single-use tickets handed out by a verified code, scoped to the operation that consumes them. */
export const tickets = sqliteTable(
  'tickets',
  {
    id: text('id').primaryKey(),
    purpose: text('purpose', { enum: ['signup', 'reset'] }).notNull(),
    tokenHash: text('token_hash').notNull(),
    email: text('email').notNull(),
    tenantName: text('tenant_name'),
    userId: text('user_id'),
    expiresAt: integer('expires_at').notNull(),
    consumedAt: integer('consumed_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('tickets_token_hash').on(t.tokenHash)],
)

/** Failed sign-ins per (account, client network): the backoff never locks the owner out from elsewhere. */
export const signinFailures = sqliteTable('signin_failures', {
  key: text('key').primaryKey(), // hmac(email) + ip prefix
  failures: integer('failures').notNull(),
  blockedUntil: integer('blocked_until').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/** Captcha tokens already spent: a token is single-use even if the verifier would accept it twice. */
export const captchaTokens = sqliteTable('captcha_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  usedAt: integer('used_at').notNull(),
})
