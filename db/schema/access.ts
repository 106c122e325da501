import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { tenants, users } from './accounts'
import { servers } from './fleet'

/**
 * The plan catalogue (docs/billing.md), seeded by migration and editable by the
 * operator. Prices are integer micro-USD per managed server per month; null means contract-priced.
 */
export const plans = sqliteTable('plans', {
  code: text('code').primaryKey(),
  label: text('label').notNull(),
  priceMicrosPerServerMonth: integer('price_micros_per_server_month'),
  /** fleet.servers.max; null means unlimited. */
  serversMax: integer('servers_max'),
  /** JSON array of feature flags, e.g. ["strategy","ai_access"]. */
  features: text('features', { mode: 'json' }).$type<string[]>().notNull(),
  upgradeEffective: text('upgrade_effective', { enum: ['same_day', 'next_day'] }).notNull(),
  downgradeEffective: text('downgrade_effective', { enum: ['next_month', 'next_day'] }).notNull(),
  position: integer('position').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/** Personal access tokens, stored only as the SHA-256 of the plaintext. */
export const accessTokens = sqliteTable(
  'access_tokens',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** First characters of the plaintext, to recognise the token in a list. */
    displayPrefix: text('display_prefix').notNull(),
    tokenHash: text('token_hash').notNull(),
    scopes: text('scopes', { mode: 'json' }).$type<string[]>().notNull(),
    serverAllowlist: text('server_allowlist', { mode: 'json' }).$type<string[]>(),
    expiresAt: integer('expires_at'),
    createdAt: integer('created_at').notNull(),
    lastUsedAt: integer('last_used_at'),
    revokedAt: integer('revoked_at'),
  },
  (t) => [uniqueIndex('access_tokens_hash').on(t.tokenHash), index('access_tokens_tenant').on(t.tenantId, t.id)],
)

/** One-time agent enrolment tokens (max 1 hour), claimed once by POST /agent/register. */
export const initTokens = sqliteTable(
  'init_tokens',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    createdBy: text('created_by').notNull(),
    tokenHash: text('token_hash').notNull(),
    serverId: text('server_id').references(() => servers.id),
    expectedFingerprint: text('expected_fingerprint'),
    purpose: text('purpose'),
    expiresAt: integer('expires_at').notNull(),
    createdAt: integer('created_at').notNull(),
    claimedAt: integer('claimed_at'),
    claimedServerId: text('claimed_server_id'),
    revokedAt: integer('revoked_at'),
  },
  (t) => [uniqueIndex('init_tokens_hash').on(t.tokenHash), index('init_tokens_tenant').on(t.tenantId)],
)

/** Who did what in a tenant, written in the transaction of the change it records. */
export const auditLog = sqliteTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    actorKind: text('actor_kind', { enum: ['user', 'pat', 'agent', 'mcp', 'system'] }).notNull(),
    actorId: text('actor_id'),
    operation: text('operation').notNull(),
    targetKind: text('target_kind'),
    targetId: text('target_id'),
    ip: text('ip'),
    userAgent: text('user_agent'),
    outcome: text('outcome', { enum: ['succeeded', 'denied', 'failed'] }).notNull(),
    status: integer('status'),
    requestId: text('request_id'),
    detail: text('detail'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('audit_log_tenant').on(t.tenantId, t.id)],
)
