import { withTransaction, writeUnlessBusy } from '../../../db/client'
import { ALL_SCOPES, ROLE_SCOPES, roleAtLeast, type Actor, type Scope } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { decodeCursor, toPage } from '../../platform/cursor'
import { ProblemError, problems, type FieldError } from '../../platform/problem'
import { generateSecret, hashSecret, hasValidChecksum } from '../../platform/secrets'
import { formatNullableTimestamp, formatTimestamp, parseTimestamp } from '../../platform/time'
import type { AuditContext } from '../audit/audit.context'
import { recordAudit } from '../audit/audit.service'
import {
  findAccessTokenByHash,
  findLiveAccessToken,
  findTenantServer,
  insertAccessToken,
  listAccessTokens,
  revokeAccessToken,
  touchAccessToken,
  type AccessTokenRow,
} from './tokens.repository'

/**
 * Personal access tokens: `gpuhq_pat_` + 238 random bits + a CRC32 checksum, shown once, stored as
 * SHA-256. Defaults: scope servers:read, expiry 90 days; at most a year; non-expiring refused in
 * production. A token acts with the scopes it was given cut down to its creator's *current* role,
 * so lowering a member's role or removing the member narrows or kills the token at once.
 */
export const DEFAULT_SCOPES: Scope[] = ['servers:read']
export const DEFAULT_TTL_DAYS = 90
export const MAX_TTL_DAYS = 366
const DAY_US = 86_400_000_000
/** last_used_at is written at most once a minute per token. */
const TOUCH_EVERY_US = 60_000_000

export type CreatePatInput = { name: string; scopes?: string[]; expires_at?: string | null; server_allowlist?: string[] }

export function createPat({ deps, actor, audit, input }: { deps: Deps; actor: Actor; audit: AuditContext; input: CreatePatInput }) {
  const now = deps.clock.nowUs()
  const scopes = [...new Set(input.scopes ?? DEFAULT_SCOPES)]
  const errors: FieldError[] = []
  scopes.forEach((s, i) => {
    if (!ALL_SCOPES.includes(s as Scope)) errors.push({ path: `/scopes/${i}`, code: 'unknown_scope' })
  })
  let expiresAt: number | null
  if (input.expires_at === undefined) expiresAt = now + DEFAULT_TTL_DAYS * DAY_US
  else if (input.expires_at === null) {
    expiresAt = null
    if (deps.config.env === 'production') errors.push({ path: '/expires_at', code: 'required' })
  } else {
    expiresAt = parseTimestamp(input.expires_at)
    if (expiresAt === null) errors.push({ path: '/expires_at', code: 'format' })
    else if (expiresAt <= now) errors.push({ path: '/expires_at', code: 'in_the_past' })
    else if (expiresAt > now + MAX_TTL_DAYS * DAY_US) errors.push({ path: '/expires_at', code: 'too_late' })
  }
  if (errors.length)
    throw problems.validation(errors, 'scopes must be known, and expires_at must lie within a year (non-expiring tokens are refused in production)')
  const role = actor.role!
  const beyond = scopes.filter((s) => !ROLE_SCOPES[role].includes(s as Scope))
  if (beyond.length) throw new ProblemError('forbidden', { detail: `a ${role} cannot grant ${beyond.join(', ')}` })

  const allowlist = input.server_allowlist ? [...new Set(input.server_allowlist.map((s) => s.toLowerCase()))] : null
  const token = generateSecret('gpuhq_pat_')
  return withTransaction(deps.db, (tx) => {
    allowlist?.forEach((id, i) => {
      if (!findTenantServer(tx, actor.tenantId, id)) throw problems.field(`/server_allowlist/${i}`, 'unknown_server', `no server ${id} in this tenant`)
    })
    const row: AccessTokenRow = {
      id: deps.newId(),
      tenantId: actor.tenantId,
      userId: actor.userId!,
      name: input.name.trim(),
      displayPrefix: token.slice(0, 'gpuhq_pat_'.length + 4),
      tokenHash: hashSecret(token),
      scopes: JSON.stringify(scopes),
      serverAllowlist: allowlist ? JSON.stringify(allowlist) : null,
      expiresAt,
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
    }
    insertAccessToken(tx, row)
    recordAudit(tx, deps, audit, { operation: 'tokens.create', targetKind: 'token', targetId: row.id })
    return { ...patView(row), token }
  })
}

export function patView(row: AccessTokenRow) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.displayPrefix,
    user_id: row.userId,
    scopes: JSON.parse(row.scopes) as string[],
    server_allowlist: row.serverAllowlist ? (JSON.parse(row.serverAllowlist) as string[]) : null,
    expires_at: formatNullableTimestamp(row.expiresAt),
    created_at: formatTimestamp(row.createdAt),
    last_used_at: formatNullableTimestamp(row.lastUsedAt),
  }
}

/** A member sees their own tokens; owners and admins see every token of the tenant. */
export function listPats({ deps, actor, input }: { deps: Deps; actor: Actor; input: { cursor?: string; limit?: number } }) {
  const limit = input.limit ?? 50
  const everyone = roleAtLeast(actor.role!, 'admin')
  const scope = `tokens:${actor.tenantId}:${everyone ? '*' : actor.userId}`
  const before = input.cursor ? decodeCursor<{ id: string }>(deps.keys.cursor, scope, input.cursor).id : null
  const rows = listAccessTokens(deps.db, actor.tenantId, everyone ? null : actor.userId, before, limit + 1)
  return toPage(rows, limit, (r) => ({ id: r.id }), { key: deps.keys.cursor, scope }, patView)
}

export function revokePat({ deps, actor, audit, id }: { deps: Deps; actor: Actor; audit: AuditContext; id: string }) {
  withTransaction(deps.db, (tx) => {
    const row = findLiveAccessToken(tx, actor.tenantId, id)
    if (!row || (row.userId !== actor.userId && !roleAtLeast(actor.role!, 'admin'))) throw problems.notFound('no such token')
    revokeAccessToken(tx, id, deps.clock.nowUs())
    recordAudit(tx, deps, audit, { operation: 'tokens.revoke', targetKind: 'token', targetId: id })
  })
}

/**
 * The actor behind a PAT, or null. A token whose checksum does not hold is refused before any
 * database lookup; a revoked or expired one, or one whose creator is gone, is unknown.
 */
export function resolvePat(deps: Deps, token: string): Actor | null {
  if (!hasValidChecksum(token, 'gpuhq_pat_')) return null
  const found = findAccessTokenByHash(deps.db, hashSecret(token))
  if (!found) return null
  const { token: row, user, tenant } = found
  const now = deps.clock.nowUs()
  if (row.revokedAt !== null || (row.expiresAt !== null && row.expiresAt <= now) || user.tenantId !== row.tenantId) return null
  if (row.lastUsedAt === null || now - row.lastUsedAt > TOUCH_EVERY_US) writeUnlessBusy(deps.db, (tx) => touchAccessToken(tx, row.id, now))
  return {
    kind: 'pat',
    via: 'bearer',
    tenantId: row.tenantId,
    userId: user.id,
    role: user.role,
    tokenId: row.id,
    scopes: (JSON.parse(row.scopes) as Scope[]).filter((s) => ROLE_SCOPES[user.role].includes(s)),
    serverAllowlist: row.serverAllowlist ? (JSON.parse(row.serverAllowlist) as string[]) : null,
    tenant: { planCode: tenant.planCode, accountState: tenant.accountState },
  }
}
