import { createHash, randomBytes } from 'node:crypto'
import { type Tx, withTransaction } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { invalidField } from '../../platform/domain-error'
import { ProblemError } from '../../platform/problem'
import { generateSecret, hashSecret, hasValidChecksum } from '../../platform/secrets'
import { recordAudit, type AuditContext } from '../audit'
import { gatewayUrl } from './access.service'
import {
  connect,
  findAccess,
  findClient,
  findCode,
  findConnection,
  findToken,
  insertClient,
  insertCode,
  insertToken,
  type ClientRow,
  revokeFamily,
  revokeToken,
  spendCode,
  useRefresh,
} from './mcp.repository'
import { oauthError } from './oauth.errors'

/**
 * The authorization server for AI assistants (docs/ai-access.md "OAuth"): RFC 7591 registration,
 * the consent answer (POST /mcp/authorize), and the token endpoint (authorization_code with PKCE
 * S256, refresh_token with rotation and reuse detection), as OAuth 2.1 and the MCP authorization
 * specification (2025-11-25) require. Codes and tokens are kept only as SHA-256.
 */

const CODE_SECONDS = 300
const ACCESS_SECONDS = 3600
/** A token family (one authorization) ends this long after the code was issued, refreshed or not. */
const FAMILY_DAYS = 30
const US = 1_000_000
const MAX_REDIRECT_URIS = 10

// ---- registration (RFC 7591) ----------------------------------------------------------------

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost'])

function redirectProblem(uri: unknown): string | null {
  if (typeof uri !== 'string' || uri.length === 0 || uri.length > 512) return 'a redirect URI is a string of 1-512 characters'
  let u: URL
  try {
    u = new URL(uri)
  } catch {
    return `"${uri.slice(0, 80)}" is not an absolute URI`
  }
  if (u.hash) return 'a redirect URI has no fragment'
  if (u.protocol === 'https:') return null
  if (u.protocol === 'http:' && LOOPBACK.has(u.hostname)) return null
  return 'a redirect URI is https, or http on a loopback address (127.0.0.1, [::1], localhost)'
}

export async function registerClient(deps: Deps, body: Record<string, unknown>) {
  const m = body
  const name = m.client_name
  if (typeof name !== 'string' || name.trim() === '' || name.length > 128)
    throw oauthError('invalid_client_metadata', 'client_name is required: a string of 1-128 characters')
  const uris = m.redirect_uris
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_REDIRECT_URIS)
    throw oauthError('invalid_redirect_uri', `redirect_uris is required: 1-${MAX_REDIRECT_URIS} URIs`)
  for (const u of uris) {
    const why = redirectProblem(u)
    if (why) throw oauthError('invalid_redirect_uri', why)
  }
  const method = m.token_endpoint_auth_method ?? 'none'
  if (method !== 'none') throw oauthError('invalid_client_metadata', 'only public clients are registered: token_endpoint_auth_method is none')
  const grants = m.grant_types ?? ['authorization_code', 'refresh_token']
  if (!Array.isArray(grants) || grants.some((g) => g !== 'authorization_code' && g !== 'refresh_token') || !grants.includes('authorization_code'))
    throw oauthError('invalid_client_metadata', 'grant_types are authorization_code and, optionally, refresh_token')
  const responses = m.response_types ?? ['code']
  if (!Array.isArray(responses) || responses.length !== 1 || responses[0] !== 'code') throw oauthError('invalid_client_metadata', 'response_types is ["code"]')
  for (const key of ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri'] as const)
    if (m[key] !== undefined && (typeof m[key] !== 'string' || (m[key] as string).length > 512 || !/^https:\/\//.test(m[key] as string)))
      throw oauthError('invalid_client_metadata', `${key} is an https URL of at most 512 characters`)
  if (m.scope !== undefined && (typeof m.scope !== 'string' || m.scope.length > 1024)) throw oauthError('invalid_client_metadata', 'scope is a string')
  const now = deps.clock.nowUs()
  const id = deps.newId()
  const metadata = {
    client_name: name.trim(),
    redirect_uris: uris as string[],
    grant_types: grants as string[],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...(typeof m.client_uri === 'string' ? { client_uri: m.client_uri } : {}),
    ...(typeof m.scope === 'string' ? { scope: m.scope } : {}),
  }
  await withTransaction(deps.db, (tx) => insertClient(tx, { id, name: metadata.client_name, redirectUris: metadata.redirect_uris, metadata, createdAt: now }))
  return { client_id: id, client_id_issued_at: Math.floor(now / US), ...metadata }
}

// ---- authorization (the owner's consent) ----------------------------------------------------

/**
 * Exact string match; for a loopback redirect (RFC 8252 §7.3) the URIs are compared parsed: scheme,
 * host, path and query equal, only the port free. Nothing else is normalised, so
 * `http://127.0.0.1/oauth/callback:8976` never matches `http://127.0.0.1:8976/oauth/callback`.
 */
function redirectMatches(registered: readonly string[], asked: string): boolean {
  if (registered.includes(asked)) return true
  const a = loopbackHttp(asked)
  if (!a) return false
  return registered.some((uri) => {
    const r = loopbackHttp(uri)
    return !!r && r.hostname === a.hostname && r.pathname === a.pathname && r.search === a.search
  })
}

/** The parsed URI when it is a plain http URI on a loopback address (no user information, no fragment). */
function loopbackHttp(uri: string): URL | null {
  let u: URL
  try {
    u = new URL(uri)
  } catch {
    return null
  }
  if (u.protocol !== 'http:' || !LOOPBACK.has(u.hostname) || u.username || u.password || u.hash) return null
  return u
}

/** The resource a client may name (RFC 8707): the gateway, or the origin whose metadata names the same server (docs/ai-access.md). */
export function acceptsResource(deps: Deps, resource: string): boolean {
  try {
    const href = new URL(resource).href
    return href === new URL(gatewayUrl(deps)).href || href === new URL(deps.config.publicUrl).href
  } catch {
    return false
  }
}

const CHALLENGE = /^[A-Za-z0-9_-]{43}$/

type AuthorizeInput = {
  client_id: string
  redirect_uri: string
  code_challenge: string
  code_challenge_method?: string
  state?: string | null
  resource?: string
  scope?: string
}

/**
 * The client and redirect URI of an authorization request, or why they cannot be trusted (then no
 * redirect may be made to that URI: the consent page shows an error page, POST answers 422).
 */
export async function registeredClient(
  deps: Deps,
  clientId: string,
  redirectUri: string,
): Promise<{ client: ClientRow; refused?: undefined } | { client?: undefined; refused: { path: string; code: string; message: string } }> {
  const client = /^[0-9a-f-]{36}$/i.test(clientId) ? await findClient(deps.db, clientId.toLowerCase()) : undefined
  if (!client) return { refused: { path: '/client_id', code: 'unknown_client', message: 'no client is registered with this client_id (POST /mcp/register)' } }
  if (!redirectMatches(client.redirectUris, redirectUri))
    return {
      refused: {
        path: '/redirect_uri',
        code: 'redirect_uri_mismatch',
        message: 'redirect_uri is not one registered for this client (compared string for string; a loopback one may differ only in its port)',
      },
    }
  return { client }
}

/** Why a PKCE challenge is refused (RFC 7636; S256 only, as OAuth 2.1 and MCP require), or null. */
export function challengeProblem(challenge: string | null | undefined, method: string | null | undefined): { path: string; message: string } | null {
  if (challenge === null || challenge === undefined || challenge === '')
    return { path: '/code_challenge', message: 'code_challenge is required: PKCE with S256' }
  if (method !== undefined && method !== null && method !== 'S256')
    return { path: '/code_challenge_method', message: 'only S256 is supported (plain is refused)' }
  if (!CHALLENGE.test(challenge)) return { path: '/code_challenge', message: 'code_challenge is the S256 challenge: 43 base64url characters' }
  return null
}

/** The checks POST /mcp/authorize passes before issuing: a registered client, one of its redirect URIs, an S256 challenge. */
async function checkedClient(deps: Deps, input: AuthorizeInput): Promise<ClientRow> {
  const { client, refused } = await registeredClient(deps, input.client_id, input.redirect_uri)
  if (refused) throw invalidField('mcp', refused.path, refused.code, refused.message)
  const pkce = challengeProblem(input.code_challenge, input.code_challenge_method)
  if (pkce) throw invalidField('mcp', pkce.path, pkce.path === '/code_challenge_method' ? 'unsupported' : 'format', pkce.message)
  return client
}

export async function authorize({ deps, actor, audit, input }: { deps: Deps; actor: Actor; audit: AuditContext; input: AuthorizeInput }) {
  const client = await checkedClient(deps, input)
  if (input.resource !== undefined && !acceptsResource(deps, input.resource))
    throw invalidField('mcp', '/resource', 'invalid_target', `resource must be ${gatewayUrl(deps)}`)
  const access = await findAccess(deps.db, actor.tenantId)
  if (!access?.enabled)
    throw new ProblemError('forbidden', { detail: 'AI-assistant access is switched off for this tenant: enable it with PUT /mcp/access first' })
  const code = randomBytes(32).toString('base64url')
  const now = deps.clock.nowUs()
  await withTransaction(deps.db, async (tx) => {
    await insertCode(tx, {
      codeHash: hashSecret(code),
      tenantId: actor.tenantId,
      clientId: client.id,
      userId: actor.userId!,
      redirectUri: input.redirect_uri,
      codeChallenge: input.code_challenge,
      resource: gatewayUrl(deps),
      expiresAt: now + CODE_SECONDS * US,
      usedAt: null,
      familyId: null,
      createdAt: now,
    })
    await recordAudit(tx, deps, audit, { operation: 'mcp.client.authorize', targetKind: 'mcp_client', targetId: client.id })
  })
  const to = new URL(input.redirect_uri)
  to.searchParams.set('code', code)
  if (input.state !== undefined && input.state !== null) to.searchParams.set('state', input.state)
  to.searchParams.set('iss', deps.config.publicUrl)
  return { redirect_to: to.toString() }
}

// ---- the token endpoint ----------------------------------------------------------------------

/** RFC 7636 §4.1: 43-128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/

const s256 = (verifier: string) => createHash('sha256').update(verifier, 'ascii').digest('base64url')

async function issuePair(deps: Deps, tx: Tx, base: { tenantId: string; clientId: string; userId: string; familyId: string; familyEnds: number }) {
  const now = deps.clock.nowUs()
  const access = generateSecret('gpuhq_mcpat_')
  const refresh = generateSecret('gpuhq_mcprt_')
  const accessEnds = Math.min(now + ACCESS_SECONDS * US, base.familyEnds)
  const common = {
    familyId: base.familyId,
    tenantId: base.tenantId,
    clientId: base.clientId,
    userId: base.userId,
    resource: gatewayUrl(deps),
    usedAt: null,
    revokedAt: null,
    createdAt: now,
  }
  await insertToken(tx, {
    ...common,
    id: deps.newId(),
    tokenHash: hashSecret(access),
    kind: 'access',
    expiresAt: accessEnds,
  })
  await insertToken(tx, { ...common, id: deps.newId(), tokenHash: hashSecret(refresh), kind: 'refresh', expiresAt: base.familyEnds })
  return {
    access_token: access,
    token_type: 'Bearer' as const,
    expires_in: Math.max(1, Math.floor((accessEnds - now) / US)),
    refresh_token: refresh,
    scope: 'mcp',
  }
}

function str(body: Record<string, unknown>, key: string): string | undefined {
  const v = body[key]
  return typeof v === 'string' ? v : undefined
}

/** POST /mcp/token (public): form or JSON. Every answer is no-store (the route sets it). */
export async function exchangeToken(deps: Deps, body: Record<string, unknown>) {
  const grant = str(body, 'grant_type')
  if (grant === 'authorization_code') return await exchangeCode(deps, body)
  if (grant === 'refresh_token') return await refresh(deps, body)
  if (grant === undefined) throw oauthError('invalid_request', 'grant_type is required')
  throw oauthError('unsupported_grant_type', 'grant_type is authorization_code or refresh_token')
}

async function exchangeCode(deps: Deps, body: Record<string, unknown>) {
  const code = str(body, 'code')
  const clientId = str(body, 'client_id')?.toLowerCase()
  const redirectUri = str(body, 'redirect_uri')
  const verifier = str(body, 'code_verifier')
  if (!code || !clientId || !redirectUri) throw oauthError('invalid_request', 'code, client_id and redirect_uri are required')
  if (verifier === undefined) throw oauthError('invalid_request', 'code_verifier is required (PKCE)')
  const resource = str(body, 'resource')
  const out = await withTransaction(deps.db, async (tx) => {
    const now = deps.clock.nowUs()
    const row = await findCode(tx, hashSecret(code))
    if (!row) return { error: oauthError('invalid_grant', 'the code is unknown') }
    if (row.usedAt !== null) {
      // Revoked before use: the client was disconnected, or access switched off, after it was issued.
      if (!row.familyId) return { error: oauthError('invalid_grant', 'the code was revoked: the client was disconnected or AI access switched off') }
      // A second use: refused, and whatever the first use issued is revoked.
      await revokeFamily(tx, row.familyId, now)
      return { error: oauthError('invalid_grant', 'the code was used already; the tokens issued for it are revoked') }
    }
    // From here the code is spent, whatever the outcome: a failed verifier cannot be retried.
    const familyId = deps.newId()
    await spendCode(tx, row.codeHash, now, familyId)
    if (row.expiresAt <= now) return { error: oauthError('invalid_grant', 'the code expired') }
    if (row.clientId !== clientId) return { error: oauthError('invalid_grant', 'the code was issued to another client') }
    if (row.redirectUri !== redirectUri) return { error: oauthError('invalid_grant', 'redirect_uri differs from the one the code was issued for') }
    if (!VERIFIER.test(verifier) || s256(verifier) !== row.codeChallenge)
      return { error: oauthError('invalid_grant', 'the code_verifier does not match the code_challenge (PKCE S256; 43-128 unreserved characters)') }
    if (resource !== undefined && !acceptsResource(deps, resource)) return { error: oauthError('invalid_target', `resource must be ${row.resource}`) }
    if (!(await findAccess(tx, row.tenantId))?.enabled) return { error: oauthError('invalid_grant', 'AI-assistant access was switched off') }
    await connect(tx, { tenantId: row.tenantId, clientId: row.clientId, userId: row.userId, connectedAt: now, lastUsedAt: null })
    return {
      ok: await issuePair(deps, tx, {
        tenantId: row.tenantId,
        clientId: row.clientId,
        userId: row.userId,
        familyId,
        familyEnds: row.createdAt + FAMILY_DAYS * 86_400 * US,
      }),
    }
  })
  // The refusal is thrown after commit: the spent code (and a revoked family) must stay written.
  if (out.error) throw out.error
  return out.ok!
}

async function refresh(deps: Deps, body: Record<string, unknown>) {
  const token = str(body, 'refresh_token')
  const clientId = str(body, 'client_id')?.toLowerCase()
  if (!token || !clientId) throw oauthError('invalid_request', 'refresh_token and client_id are required')
  const resource = str(body, 'resource')
  if (!hasValidChecksum(token, 'gpuhq_mcprt_')) throw oauthError('invalid_grant', 'the refresh token is unknown')
  const out = await withTransaction(deps.db, async (tx) => {
    const now = deps.clock.nowUs()
    const row = await findToken(tx, hashSecret(token))
    if (row?.kind !== 'refresh') return { error: oauthError('invalid_grant', 'the refresh token is unknown') }
    if (row.clientId !== clientId) return { error: oauthError('invalid_grant', 'the refresh token was issued to another client') }
    if (row.usedAt !== null) {
      // Reuse of a rotated refresh token: somebody holds a copy. The whole family is revoked.
      await revokeFamily(tx, row.familyId, now)
      return { error: oauthError('invalid_grant', 'the refresh token was used already; every token of this authorization is revoked') }
    }
    if (row.revokedAt !== null || row.expiresAt <= now) return { error: oauthError('invalid_grant', 'the refresh token is revoked or expired') }
    if (resource !== undefined && !acceptsResource(deps, resource)) return { error: oauthError('invalid_target', `resource must be ${row.resource}`) }
    if (!(await findAccess(tx, row.tenantId))?.enabled || !(await findConnection(tx, row.tenantId, row.clientId)))
      return { error: oauthError('invalid_grant', 'the client is no longer connected') }
    if (!(await useRefresh(tx, row.id, now))) return { error: oauthError('invalid_grant', 'the refresh token was used already') }
    return {
      ok: await issuePair(deps, tx, { tenantId: row.tenantId, clientId: row.clientId, userId: row.userId, familyId: row.familyId, familyEnds: row.expiresAt }),
    }
  })
  if (out.error) throw out.error
  return out.ok!
}

// ---- revocation (RFC 7009) -------------------------------------------------------------------

/**
 * POST /mcp/revoke (public): a client gives up a token it holds. A refresh token takes its whole
 * authorization with it (every access and refresh token of the family, RFC 7009 §2.1); an access
 * token only itself. An unknown, expired or already revoked token, or one issued to another client,
 * answers 200 all the same and nothing is revoked (§2.2: the client cannot tell, nor learn whose a
 * token is). The tenant's own `gpuhq_mcp_` token is not revoked here: unsupported_token_type.
 */
export async function revokeOAuthToken(deps: Deps, body: Record<string, unknown>): Promise<Record<string, never>> {
  const token = str(body, 'token')
  const clientId = str(body, 'client_id')?.toLowerCase()
  if (!token) throw oauthError('invalid_request', 'token is required')
  if (!clientId) throw oauthError('invalid_request', 'client_id is required (public clients identify themselves with it)')
  if (hasValidChecksum(token, 'gpuhq_mcp_'))
    throw oauthError('unsupported_token_type', 'the tenant AI-assistant token is revoked by its owner (PUT /api/v1/mcp/access), not here')
  if (!hasValidChecksum(token, 'gpuhq_mcpat_') && !hasValidChecksum(token, 'gpuhq_mcprt_')) return {}
  await withTransaction(deps.db, async (tx) => {
    const row = await findToken(tx, hashSecret(token))
    if (!row || row.clientId !== clientId || row.revokedAt !== null) return
    const now = deps.clock.nowUs()
    if (row.kind === 'refresh') await revokeFamily(tx, row.familyId, now)
    else await revokeToken(tx, row.id, now)
  })
  return {}
}
