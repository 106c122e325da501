import type { Static } from '@sinclair/typebox'
import { withTransaction, writeUnlessBusy } from '../../../db/client'
import { ALL_SCOPES, ROLE_SCOPES, roleAtLeast, type Actor, type Scope } from '../../platform/access'
import { readAuthEpoch, VerifiedCredentials } from '../../platform/auth-epoch'
import { perDeps, type Deps } from '../../platform/context'
import { paginate } from '../../platform/cursor'
import type { FieldError } from '../../platform/problem'
import { generateSecret, hashSecret, hasValidChecksum } from '../../platform/secrets'
import { formatNullableTimestamp, formatTimestamp, parseTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { findTenant } from '../tenants'
import { findUserById } from '../users'
import { TokenErrors } from './tokens.errors'
import type { PatCreate, PatQuery } from './tokens.model'
import { findManagedServer } from './tokens.servers'
import {
  findAccessTokenByHash,
  findLiveAccessToken,
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
const DEFAULT_SCOPES: Scope[] = ['servers:read']
const DEFAULT_TTL_DAYS = 90
const MAX_TTL_DAYS = 366
const DAY_US = 86_400_000_000
/** last_used_at is written at most once a minute per token. */
const TOUCH_EVERY_US = 60_000_000

export async function createPat({ deps, actor, audit, input }: { deps: Deps; actor: Actor; audit: AuditContext; input: Static<typeof PatCreate> }) {
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
  if (errors.length) throw TokenErrors.invalidPat(errors)
  const role = actor.role!
  const beyond = scopes.filter((s) => !ROLE_SCOPES[role].includes(s as Scope))
  if (beyond.length) throw TokenErrors.scopeBeyondRole(role, beyond)

  const allowlist = input.server_allowlist ? [...new Set(input.server_allowlist.map((s) => s.toLowerCase()))] : null
  const token = generateSecret('gpuhq_pat_')
  return await withTransaction(deps.db, async (tx) => {
    for (const [i, id] of (allowlist ?? []).entries()) {
      if (!(await findManagedServer(tx, actor.tenantId, id))) throw TokenErrors.unknownAllowlistServer(i, id)
    }
    const row: AccessTokenRow = {
      id: deps.newId(),
      tenantId: actor.tenantId,
      userId: actor.userId!,
      name: input.name.trim(),
      displayPrefix: token.slice(0, 'gpuhq_pat_'.length + 4),
      tokenHash: hashSecret(token),
      scopes,
      serverAllowlist: allowlist,
      expiresAt,
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
    }
    await insertAccessToken(tx, row)
    await recordAudit(tx, deps, audit, { operation: 'tokens.create', targetKind: 'token', targetId: row.id })
    return { ...patView(row), token }
  })
}

function patView(row: AccessTokenRow) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.displayPrefix,
    user_id: row.userId,
    scopes: row.scopes,
    server_allowlist: row.serverAllowlist,
    expires_at: formatNullableTimestamp(row.expiresAt),
    created_at: formatTimestamp(row.createdAt),
    last_used_at: formatNullableTimestamp(row.lastUsedAt),
  }
}

/** A member sees their own tokens; owners and admins see every token of the tenant. */
export async function listPats({ deps, actor, input }: { deps: Deps; actor: Actor; input: Static<typeof PatQuery> }) {
  const everyone = roleAtLeast(actor.role!, 'admin')
  return await paginate(deps.keys.cursor, {
    scope: `tokens:${actor.tenantId}:${everyone ? '*' : actor.userId}`,
    input,
    fetch: (before: { id: string } | undefined, take) => listAccessTokens(deps.db, actor.tenantId, everyone ? null : actor.userId, before?.id ?? null, take),
    position: (r) => ({ id: r.id }),
    view: patView,
  })
}

export async function revokePat({ deps, actor, audit, id }: { deps: Deps; actor: Actor; audit: AuditContext; id: string }) {
  await withTransaction(deps.db, async (tx) => {
    const row = await findLiveAccessToken(tx, actor.tenantId, id)
    if (!row || (row.userId !== actor.userId && !roleAtLeast(actor.role!, 'admin'))) throw TokenErrors.tokenNotFound()
    await revokeAccessToken(tx, id, deps.clock.nowUs())
    await recordAudit(tx, deps, audit, { operation: 'tokens.revoke', targetKind: 'token', targetId: id })
  })
}

/** What a PAT request needs of its rows, verified once and kept while the credentials are unchanged. */
type VerifiedPat = {
  tokenId: string
  tenantId: string
  userId: string
  role: NonNullable<Actor['role']>
  scopes: Scope[]
  serverAllowlist: string[] | null
  expiresAt: number | null
  lastUsedAt: number | null
  tenant: Actor['tenant']
}

const verifiedPats = perDeps(() => new VerifiedCredentials<VerifiedPat>())

/**
 * The caller of a PAT, or null for an unknown, revoked, expired or orphaned one (a token whose
 * checksum does not hold is refused before any database lookup). The rows (token,
 * member, tenant) are read once and kept in memory with the credentials' change counter read
 * before them (src/platform/auth-epoch.ts): each request reads the counter (one point read) and
 * uses what it verified while the counter is the same, so a revocation, a role change, a removed
 * member or a changed plan or account state, committed by any process, stops or narrows the token
 * at its next request as before. Expiry is checked against the clock on every request.
 */
export async function resolvePat(deps: Deps, token: string): Promise<Actor | null> {
  if (!hasValidChecksum(token, 'gpuhq_pat_')) return null
  const hash = hashSecret(token)
  const epoch = await readAuthEpoch(deps.db)
  const cache = verifiedPats(deps)
  let pat = cache.get(hash, epoch)
  if (pat === undefined) {
    const row = await findAccessTokenByHash(deps.db, hash)
    if (!row) return null
    // A token whose creator or tenant is gone is unknown, like an unknown token.
    const [user, tenant] = await Promise.all([findUserById(deps.db, row.userId), findTenant(deps.db, row.tenantId)])
    if (!user || !tenant || row.revokedAt !== null || user.tenantId !== row.tenantId) return null
    pat = {
      tokenId: row.id,
      tenantId: row.tenantId,
      userId: user.id,
      role: user.role,
      scopes: (row.scopes as Scope[]).filter((s) => ROLE_SCOPES[user.role].includes(s)),
      serverAllowlist: row.serverAllowlist,
      expiresAt: row.expiresAt,
      lastUsedAt: row.lastUsedAt,
      tenant: { planCode: tenant.planCode, accountState: tenant.accountState },
    }
    cache.set(hash, epoch, pat)
  }
  const now = deps.clock.nowUs()
  if (pat.expiresAt !== null && pat.expiresAt <= now) return null
  if (pat.lastUsedAt === null || now - pat.lastUsedAt > TOUCH_EVERY_US) {
    const id = pat.tokenId
    if (await writeUnlessBusy(deps.db, (tx) => touchAccessToken(tx, id, now))) pat.lastUsedAt = now
  }
  return patActor(pat)
}

function patActor(pat: VerifiedPat): Actor {
  return {
    kind: 'pat',
    via: 'bearer',
    tenantId: pat.tenantId,
    userId: pat.userId,
    role: pat.role,
    tokenId: pat.tokenId,
    scopes: [...pat.scopes],
    serverAllowlist: pat.serverAllowlist === null ? null : [...pat.serverAllowlist],
    tenant: { ...pat.tenant },
  }
}

/**
 * A PAT verified by an earlier request, as it was then, with the change counter it was verified
 * under, reading nothing (src/platform/access.ts confirms it with the counter the rate limit's
 * statement reads, on PostgreSQL). Null when none is kept, it has expired, or its last-used stamp is
 * due (resolvePat writes that).
 */
export function keptPat(deps: Deps, token: string): { actor: Actor; epoch: number } | null {
  if (!hasValidChecksum(token, 'gpuhq_pat_')) return null
  const kept = verifiedPats(deps).peek(hashSecret(token))
  if (!kept) return null
  const pat = kept.value
  const now = deps.clock.nowUs()
  if ((pat.expiresAt !== null && pat.expiresAt <= now) || pat.lastUsedAt === null || now - pat.lastUsedAt > TOUCH_EVERY_US) return null
  return { actor: patActor(pat), epoch: kept.epoch }
}
