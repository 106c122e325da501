import type { Static } from '@sinclair/typebox'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { generateSecret, hashSecret, hasValidChecksum } from '../../platform/secrets'
import { formatTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { countManagedServers } from '../fleet'
import { findPlan } from '../plans'
import { findTenant } from '../tenants'
import { TokenErrors } from './tokens.errors'
import type { InitCreate } from './tokens.model'
import { findManagedServer } from './tokens.servers'
import { claimInitTokenRow, countOutstandingUnboundInitTokens, insertInitToken, type InitTokenRow } from './tokens.repository'

/**
 * Agent init tokens: one-time enrolment credentials, at most one hour, shown once.
 *
 * The server limit (the plan's fleet.servers.max), as a user would expect it: a token bound to an
 * existing server re-installs that server's agent and adds nothing, so it is always allowed; an
 * unbound token may add a server, so it is refused once managed servers (enrolled, not
 * decommissioned) plus the unbound tokens still outstanding (unused, unexpired, unrevoked) reach
 * the limit. The claim re-checks the limit.
 */
const INIT_TOKEN_DEFAULT_SECONDS = 3600

function installCommand(publicUrl: string): string {
  return `gpuhq-agent enroll --url ${publicUrl} --token-file /root/gpuhq-init-token   # or: printf '%s' "$TOKEN" | gpuhq-agent enroll --url ${publicUrl} --token-stdin`
}

export async function createInitToken({ deps, actor, audit, input }: { deps: Deps; actor: Actor; audit: AuditContext; input: Static<typeof InitCreate> }) {
  const seconds = input.expires_in_s ?? INIT_TOKEN_DEFAULT_SECONDS
  // An unbound token enrols a new server, which no allowlist can name in advance: a token limited
  // to servers may only re-enrol one of them (its server_id was checked against the allowlist).
  if (actor.serverAllowlist && !input.server_id) throw TokenErrors.initTokenNeedsServer()
  const token = generateSecret('gpuhq_init_')
  return await withTransaction(deps.db, async (tx) => {
    const now = deps.clock.nowUs()
    const serverId = input.server_id?.toLowerCase() ?? null
    if (serverId) {
      if (!(await findManagedServer(tx, actor.tenantId, serverId))) throw TokenErrors.serverNotFound()
    } else {
      await assertRoomForServer(tx, actor.tenantId, now, 1)
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
    await insertInitToken(tx, row)
    await recordAudit(tx, deps, audit, { operation: 'tokens.init.create', targetKind: serverId ? 'server' : 'init_token', targetId: serverId ?? row.id })
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
 * Refuses (server_limit_reached) when `adding` more servers would pass the plan's limit, counting the
 * outstanding unbound tokens as promised servers, and (plan_required) without a plan.
 */
export async function assertRoomForServer(tx: DbOrTx, tenantId: string, now: number, adding: number, countOutstanding = true): Promise<void> {
  const tenant = await findTenant(tx, tenantId)
  if (!tenant?.planCode) throw TokenErrors.planRequired()
  const plan = await findPlan(tx, tenant.planCode)
  if (!plan || plan.serversMax === null) return
  const used = (await countManagedServers(tx, tenantId)) + (countOutstanding ? await countOutstandingUnboundInitTokens(tx, tenantId, now) : 0)
  if (used + adding > plan.serversMax) throw TokenErrors.serverLimitReached({ label: plan.label, serversMax: plan.serversMax }, used)
}

/**
 * The consumption primitive of POST /agent/register: claims a plaintext init token exactly once.
 * A token with a broken checksum is refused before any lookup. Returns null for a used, expired,
 * revoked or unknown token (all the same 401 to the agent).
 */
export async function claimInitToken(tx: DbOrTx, deps: Pick<Deps, 'clock'>, plaintext: string): Promise<InitTokenRow | null> {
  if (!hasValidChecksum(plaintext, 'gpuhq_init_')) return null
  return (await claimInitTokenRow(tx, hashSecret(plaintext), deps.clock.nowUs())) ?? null
}
