import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { ProblemError, problems } from '../../platform/problem'
import { generateSecret, hashSecret, hasValidChecksum } from '../../platform/secrets'
import { formatTimestamp } from '../../platform/time'
import type { AuditContext } from '../audit/audit.context'
import { recordAudit } from '../audit/audit.service'
import { findPlan } from '../plans/plans.repository'
import { findTenant } from '../tenants/tenants.repository'
import {
  claimInitTokenRow,
  countManagedServers,
  countOutstandingUnboundInitTokens,
  findTenantServer,
  insertInitToken,
  type InitTokenRow,
} from './tokens.repository'

/**
 * Agent init tokens: one-time enrolment credentials, at most one hour, shown once.
 *
 * The server limit (the plan's fleet.servers.max), as a user would expect it: a token bound to an
 * existing server re-installs that server's agent and adds nothing, so it is always allowed; an
 * unbound token may add a server, so it is refused once managed servers (enrolled, not
 * decommissioned) plus the unbound tokens still outstanding (unused, unexpired, unrevoked) reach
 * the limit. The claim re-checks the limit.
 */
export const INIT_TOKEN_MAX_SECONDS = 3600
export const INIT_TOKEN_DEFAULT_SECONDS = 3600

export type CreateInitInput = { expected_fingerprint?: string | null; server_id?: string | null; purpose?: string | null; expires_in_s?: number }

export function installCommand(publicUrl: string): string {
  return `gpuhq-agent enroll --url ${publicUrl} --token-file /root/gpuhq-init-token   # or: printf '%s' "$TOKEN" | gpuhq-agent enroll --url ${publicUrl} --token-stdin`
}

export function createInitToken({ deps, actor, audit, input }: { deps: Deps; actor: Actor; audit: AuditContext; input: CreateInitInput }) {
  const seconds = input.expires_in_s ?? INIT_TOKEN_DEFAULT_SECONDS
  // An unbound token enrols a new server, which no allowlist can name in advance: a token limited
  // to servers may only re-enrol one of them (its server_id was checked against the allowlist).
  if (actor.serverAllowlist && !input.server_id)
    throw new ProblemError('forbidden', { detail: 'a token limited to servers (server_allowlist) can only mint init tokens bound to one of them (server_id)' })
  const token = generateSecret('gpuhq_init_')
  return withTransaction(deps.db, (tx) => {
    const now = deps.clock.nowUs()
    const serverId = input.server_id?.toLowerCase() ?? null
    if (serverId) {
      if (!findTenantServer(tx, actor.tenantId, serverId)) throw problems.notFound('no such server')
    } else {
      assertRoomForServer(tx, actor.tenantId, now, 1)
    }
    const row: InitTokenRow = {
      id: deps.newId(),
      tenantId: actor.tenantId,
      createdBy: actor.userId ?? actor.tokenId ?? 'system',
      tokenHash: hashSecret(token),
      serverId,
      expectedFingerprint: input.expected_fingerprint ?? null,
      purpose: input.purpose ?? null,
      expiresAt: now + seconds * 1_000_000,
      createdAt: now,
      claimedAt: null,
      claimedServerId: null,
      revokedAt: null,
    }
    insertInitToken(tx, row)
    recordAudit(tx, deps, audit, { operation: 'tokens.init.create', targetKind: serverId ? 'server' : 'init_token', targetId: serverId ?? row.id })
    return {
      id: row.id,
      token,
      expires_at: formatTimestamp(row.expiresAt),
      server_id: serverId,
      purpose: row.purpose,
      expected_fingerprint: row.expectedFingerprint,
      install_command: installCommand(deps.config.publicUrl),
    }
  })
}

/**
 * 409 server_limit_reached when `adding` more servers would pass the plan's limit, counting the
 * outstanding unbound tokens as promised servers; 409 plan_required without a plan.
 */
export function assertRoomForServer(tx: DbOrTx, tenantId: string, now: number, adding: number, countOutstanding = true): void {
  const tenant = findTenant(tx, tenantId)
  if (!tenant?.planCode) throw new ProblemError('plan_required', { detail: 'the tenant has no plan assignment' })
  const plan = findPlan(tx, tenant.planCode)
  if (!plan || plan.serversMax === null) return
  const used = countManagedServers(tx, tenantId) + (countOutstanding ? countOutstandingUnboundInitTokens(tx, tenantId, now) : 0)
  if (used + adding > plan.serversMax)
    throw new ProblemError('server_limit_reached', {
      detail: `the ${plan.label} plan manages at most ${plan.serversMax} server${plan.serversMax === 1 ? '' : 's'}; ${used} ${used === 1 ? 'is' : 'are'} enrolled or promised to unused install tokens`,
    })
}

/**
 * The consumption primitive of POST /agent/register: claims a plaintext init token exactly once.
 * A token with a broken checksum is refused before any lookup. Returns null for a used, expired,
 * revoked or unknown token (all the same 401 to the agent).
 */
export function claimInitToken(tx: DbOrTx, deps: Pick<Deps, 'clock'>, plaintext: string): InitTokenRow | null {
  if (!hasValidChecksum(plaintext, 'gpuhq_init_')) return null
  return claimInitTokenRow(tx, hashSecret(plaintext), deps.clock.nowUs()) ?? null
}
