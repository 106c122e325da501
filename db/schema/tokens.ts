import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { servers } from './fleet'
import { tenants } from './tenants'
import { users } from './users'

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
