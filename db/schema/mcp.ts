import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { tenants } from './tenants'
import { users } from './users'

/**
 * AI-assistant access (the spec's "Access token for AI assistants"; docs/ai-access.md): one row per
 * tenant that ever enabled it. The `gpuhq_mcp_` token is kept only as its SHA-256; `allowed_tools`
 * are the tools the owner allowed (the token's scopes). `issued_by` is the member whose role bounds
 * what the token may do.
 */
export const mcpAccess = sqliteTable('mcp_access', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => tenants.id),
  enabled: integer('enabled', { mode: 'boolean' }).notNull(),
  tokenHash: text('token_hash'),
  prefix: text('prefix'),
  allowedTools: text('allowed_tools', { mode: 'json' }).$type<string[]>().notNull(),
  issuedBy: text('issued_by').references(() => users.id),
  issuedAt: integer('issued_at'),
  expiresAt: integer('expires_at'),
  lastUsedAt: integer('last_used_at'),
  version: integer('version').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/**
 * A client registered through RFC 7591 dynamic registration (POST /mcp/register, public). It
 * belongs to no tenant until an owner authorizes it; its redirect URIs are matched string for string.
 */
export const mcpClients = sqliteTable('mcp_clients', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  redirectUris: text('redirect_uris', { mode: 'json' }).$type<string[]>().notNull(),
  metadata: text('metadata', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
  createdAt: integer('created_at').notNull(),
})

/** A client connected to a tenant: made by the first authorization, ended by DELETE /mcp/clients/{id}. */
export const mcpConnections = sqliteTable(
  'mcp_connections',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    clientId: text('client_id')
      .notNull()
      .references(() => mcpClients.id),
    userId: text('user_id')
      .notNull()
      .references(() => users.id),
    connectedAt: integer('connected_at').notNull(),
    lastUsedAt: integer('last_used_at'),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.clientId] })],
)

/**
 * An authorization code (POST /mcp/authorize): kept as a SHA-256, bound to client, redirect URI,
 * PKCE challenge and resource, short-lived, spent once (a failed verifier spends it too).
 */
export const mcpCodes = sqliteTable('mcp_codes', {
  codeHash: text('code_hash').primaryKey(),
  tenantId: text('tenant_id')
    .notNull()
    .references(() => tenants.id),
  clientId: text('client_id').notNull(),
  userId: text('user_id').notNull(),
  redirectUri: text('redirect_uri').notNull(),
  codeChallenge: text('code_challenge').notNull(),
  resource: text('resource').notNull(),
  expiresAt: integer('expires_at').notNull(),
  usedAt: integer('used_at'),
  /** The token family the code was exchanged for: revoked when the code is presented again. */
  familyId: text('family_id'),
  createdAt: integer('created_at').notNull(),
})

/**
 * OAuth access and refresh tokens (POST /mcp/token), SHA-256 only. One family per authorization
 * code: refresh rotates within it; a used refresh token presented again revokes the family.
 */
export const mcpTokens = sqliteTable(
  'mcp_tokens',
  {
    id: text('id').primaryKey(),
    tokenHash: text('token_hash').notNull(),
    kind: text('kind', { enum: ['access', 'refresh'] }).notNull(),
    familyId: text('family_id').notNull(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    clientId: text('client_id').notNull(),
    userId: text('user_id').notNull(),
    resource: text('resource').notNull(),
    expiresAt: integer('expires_at').notNull(),
    /** A refresh token's rotation: set when it was exchanged for the next pair. */
    usedAt: integer('used_at'),
    revokedAt: integer('revoked_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('mcp_tokens_hash').on(t.tokenHash), index('mcp_tokens_family').on(t.familyId), index('mcp_tokens_client').on(t.tenantId, t.clientId)],
)
