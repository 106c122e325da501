import { randomBytes } from 'node:crypto'
import { withTransaction, type DbOrTx, writeUnlessBusy } from '../../../db/client'
import type { Actor } from '../../platform/access'
import { readAuthEpoch, VerifiedCredentials } from '../../platform/auth-epoch'
import { perDeps, type Deps } from '../../platform/context'
import { hashSecret } from '../../platform/secrets'
import { findTenant } from '../tenants'
import { findUserById } from '../users'
import { deleteSession, findSessionByTokenHash, insertSession, touchSession } from './sessions.repository'

/**
 * Browser sessions: a random 256-bit token in the `__Host-gpuhq_session` cookie, stored only as
 * its SHA-256, with an idle and an absolute expiry (SESSION_IDLE_SECONDS, SESSION_ABSOLUTE_SECONDS).
 * Every sign-in makes a new token; signing out deletes the row, so the old cookie is dead.
 */

/** Touch the idle expiry at most once a minute per session, not on every request. */
const TOUCH_EVERY_US = 60 * 1_000_000

export type NewSession = { id: string; token: string; maxAgeSeconds: number }

export async function startSession(tx: DbOrTx, deps: Deps, input: { userId: string; ip: string; userAgent: string | null }): Promise<NewSession> {
  const token = randomBytes(32).toString('base64url')
  const now = deps.clock.nowUs()
  const id = deps.newId()
  const idle = deps.config.sessionIdleSeconds * 1_000_000
  const absolute = deps.config.sessionAbsoluteSeconds * 1_000_000
  await insertSession(tx, {
    id,
    userId: input.userId,
    tokenHash: hashSecret(token),
    createdAt: now,
    lastSeenAt: now,
    idleExpiresAt: now + idle,
    absoluteExpiresAt: now + absolute,
    ip: input.ip,
    userAgent: input.userAgent?.slice(0, 256) ?? null,
  })
  return { id, token, maxAgeSeconds: deps.config.sessionAbsoluteSeconds }
}

/** What a cookie request needs of its rows, verified once and kept while the credentials are unchanged. */
type VerifiedSession = {
  sessionId: string
  userId: string
  tenantId: string
  role: NonNullable<Actor['role']>
  lastSeenAt: number
  idleExpiresAt: number
  absoluteExpiresAt: number
  tenant: Actor['tenant']
}

const verifiedSessions = perDeps(() => new VerifiedCredentials<VerifiedSession>())

/**
 * The actor behind a session cookie, or null when the token is unknown or the session expired.
 * The rows (session, member, tenant) are kept in memory while the credentials' change counter is
 * unchanged (src/platform/auth-epoch.ts: a signed-out or deleted session, a changed role, plan or
 * account state moves it), as for tokens. An expiry seen in memory is read again from the
 * database first: another instance may have slid it.
 */
export async function resolveSession(deps: Deps, token: string): Promise<Actor | null> {
  if (token.length < 20 || token.length > 128) return null
  const hash = hashSecret(token)
  const epoch = await readAuthEpoch(deps.db)
  const cache = verifiedSessions(deps)
  const now = deps.clock.nowUs()
  let verified = cache.get(hash, epoch)
  if (verified && (verified.idleExpiresAt <= now || verified.absoluteExpiresAt <= now)) verified = undefined
  if (!verified) {
    const session = await findSessionByTokenHash(deps.db, hash)
    // A session whose member or tenant is gone is unknown, like an unknown token.
    const user = session && (await findUserById(deps.db, session.userId))
    const tenant = user && (await findTenant(deps.db, user.tenantId))
    if (!session || !user || !tenant) return null
    if (session.idleExpiresAt <= now || session.absoluteExpiresAt <= now) {
      await withTransaction(deps.db, (tx) => deleteSession(tx, session.id))
      return null
    }
    verified = {
      sessionId: session.id,
      userId: user.id,
      tenantId: user.tenantId,
      role: user.role,
      lastSeenAt: session.lastSeenAt,
      idleExpiresAt: session.idleExpiresAt,
      absoluteExpiresAt: session.absoluteExpiresAt,
      tenant: { planCode: tenant.planCode, accountState: tenant.accountState },
    }
    cache.set(hash, epoch, verified)
  }
  if (now - verified.lastSeenAt > TOUCH_EVERY_US) {
    const idleUntil = Math.min(now + deps.config.sessionIdleSeconds * 1_000_000, verified.absoluteExpiresAt)
    const id = verified.sessionId
    // Skipped while another process holds the write lock: the next request slides the expiry.
    if (await writeUnlessBusy(deps.db, (tx) => touchSession(tx, id, now, idleUntil))) {
      verified.lastSeenAt = now
      verified.idleExpiresAt = idleUntil
    }
  }
  return sessionActor(verified)
}

/**
 * A session verified by an earlier request, as it was then, with the change counter it was
 * verified under, reading nothing (src/platform/access.ts confirms it with the counter the rate
 * limit's statement reads, on PostgreSQL). Null when none is kept, its expiry has passed as kept
 * (another instance may have slid it: resolveSession reads it again), or its touch is due.
 */
export function keptSession(deps: Deps, token: string): { actor: Actor; epoch: number } | null {
  if (token.length < 20 || token.length > 128) return null
  const kept = verifiedSessions(deps).peek(hashSecret(token))
  if (!kept) return null
  const verified = kept.value
  const now = deps.clock.nowUs()
  if (verified.idleExpiresAt <= now || verified.absoluteExpiresAt <= now || now - verified.lastSeenAt > TOUCH_EVERY_US) return null
  return { actor: sessionActor(verified), epoch: kept.epoch }
}

function sessionActor(verified: VerifiedSession): Actor {
  return {
    kind: 'user',
    via: 'cookie',
    userId: verified.userId,
    tenantId: verified.tenantId,
    role: verified.role,
    sessionId: verified.sessionId,
    scopes: null,
    serverAllowlist: null,
    tenant: { ...verified.tenant },
  }
}

export async function endSession({ deps, sessionId }: { deps: Deps; sessionId: string }): Promise<void> {
  await withTransaction(deps.db, (tx) => deleteSession(tx, sessionId))
}
