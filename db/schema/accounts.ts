import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

// Tenants, their members and how members sign in. Times are integer microseconds.

export const tenants = sqliteTable('tenants', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** Catalogue code of the tenant's plan; null means no plan assignment (409 plan_required). */
  planCode: text('plan_code'),
  /** Account state for billing: active, grace or frozen. */
  accountState: text('account_state', { enum: ['active', 'grace', 'frozen'] })
    .notNull()
    .default('active'),
  /** When the balance went below zero (grace started); null while active. */
  graceSince: integer('grace_since'),
  frozenAt: integer('frozen_at'),
  /** Moves on with every change of plan or pending plan change: ETag / If-Match of GET /subscription. */
  subscriptionVersion: integer('subscription_version').notNull().default(1),
  createdAt: integer('created_at').notNull(),
})

export const users = sqliteTable(
  'users',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    /** Lower-cased; one account per address across the deployment. */
    email: text('email').notNull(),
    passwordHash: text('password_hash'),
    role: text('role', { enum: ['owner', 'admin', 'operator', 'viewer'] }).notNull(),
    displayName: text('display_name'),
    timezone: text('timezone').notNull().default('UTC'),
    locale: text('locale').notNull().default('en'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('users_email').on(t.email), index('users_tenant').on(t.tenantId)],
)

export const sessions = sqliteTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    createdAt: integer('created_at').notNull(),
    lastSeenAt: integer('last_seen_at').notNull(),
    idleExpiresAt: integer('idle_expires_at').notNull(),
    absoluteExpiresAt: integer('absolute_expires_at').notNull(),
    ip: text('ip'),
    userAgent: text('user_agent'),
  },
  (t) => [uniqueIndex('sessions_token_hash').on(t.tokenHash), index('sessions_user').on(t.userId)],
)

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
