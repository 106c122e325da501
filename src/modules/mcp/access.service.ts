import { withTransaction, writeUnlessBusy, type DbOrTx } from '../../../db/client'
import { ROLE_SCOPES, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { defineErrors, invalidField } from '../../platform/domain-error'
import { generateSecret, hashSecret, hasValidChecksum } from '../../platform/secrets'
import { formatNullableTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { featuresOfPlan } from '../plans'
import { findTenant } from '../tenants'
import { findUserById } from '../users'
import {
  type AccessRow,
  connectionsOf,
  disconnect,
  findAccess,
  findAccessByHash,
  findClient,
  findConnection,
  findToken,
  revokeTenantTokens,
  saveAccess,
  touchAccess,
  touchConnection,
} from './mcp.repository'
import { GROUPS, READ_TOOLS, TOOL_NAMES, TOOLS } from './tools'

/**
 * AI-assistant access (docs/ai-access.md): the spec's state table for the one `gpuhq_mcp_` token
 * of a tenant, the connected OAuth clients, and who a bearer token on the gateway is.
 */

const E = defineErrors('mcp', {
  clientNotFound: { problem: 'not_found', message: 'no such client connected to this tenant' },
})

/** How long a `gpuhq_mcp_` token lives; PUT /mcp/access with reissue renews it. */
const TOKEN_DAYS = 365
const DAY_US = 86_400 * 1_000_000
const TOUCH_EVERY_US = 60 * 1_000_000

export const gatewayUrl = (deps: Deps) => `${deps.config.publicUrl}/mcp`

/** Whether the plan lets the tenant use AI access at all (every tool needs it). */
async function planAllows(deps: Deps, planCode: string | null): Promise<boolean> {
  return planCode !== null && (await featuresOfPlan(deps.db, planCode)).includes('ai_access')
}

async function toolsView(deps: Deps, row: AccessRow | undefined, planCode: string | null) {
  const available = await planAllows(deps, planCode)
  const issuer = row?.issuedBy ? await findUserById(deps.db, row.issuedBy) : undefined
  const roleScopes = issuer ? ROLE_SCOPES[issuer.role] : []
  return TOOLS.map((t) => ({
    name: t.name,
    group: t.group,
    mode: t.mode,
    allowed: !!row?.enabled && row.allowedTools.includes(t.name) && roleScopes.includes(t.scope),
    available,
  }))
}

async function accessView(deps: Deps, tenantId: string, row: AccessRow | undefined, token?: string) {
  const tenant = (await findTenant(deps.db, tenantId))!
  const connections = await connectionsOf(deps.db, tenantId)
  const tools = await toolsView(deps, row, tenant.planCode)
  return {
    enabled: row?.enabled ?? false,
    groups: GROUPS.map((g) => ({ key: g.key, description: g.description })),
    prefix: row?.enabled ? row.prefix : null,
    issued_at: formatNullableTimestamp(row?.enabled ? row.issuedAt : null),
    last_used_at: formatNullableTimestamp(row?.enabled ? row.lastUsedAt : null),
    expires_at: formatNullableTimestamp(row?.enabled ? row.expiresAt : null),
    endpoint: gatewayUrl(deps),
    clients: connections.map((c) => ({
      id: c.clientId,
      name: c.name,
      connected_at: formatNullableTimestamp(c.connectedAt)!,
      last_used_at: formatNullableTimestamp(c.lastUsedAt),
    })),
    tools,
    ...(token ? { token } : {}),
  }
}

export async function getAccess({ deps, actor }: { deps: Deps; actor: Actor }) {
  return await accessView(deps, actor.tenantId, await findAccess(deps.db, actor.tenantId))
}

type AccessInput = { enabled: boolean; reissue?: boolean; allowed_tools?: string[] }

function checkTools(tools: string[]): void {
  tools.forEach((name, i) => {
    if (!TOOL_NAMES.includes(name))
      throw invalidField('mcp', `/allowed_tools/${i}`, 'unknown_tool', `unknown tool "${name.slice(0, 64)}"; the catalogue is in GET /mcp/access tools`)
    if (tools.indexOf(name) !== i) throw invalidField('mcp', `/allowed_tools/${i}`, 'duplicate', `"${name}" is listed twice`)
  })
}

/** PUT /mcp/access: the state table (enable, rewrite scopes, reissue, disable). */
export async function putAccess({ deps, actor, audit, input }: { deps: Deps; actor: Actor; audit: AuditContext; input: AccessInput }) {
  if (input.allowed_tools) checkTools(input.allowed_tools)
  return await withTransaction(deps.db, async (tx) => {
    const now = deps.clock.nowUs()
    const row = await findAccess(tx, actor.tenantId)
    let token: string | undefined
    let next: AccessRow
    if (!input.enabled) {
      // enabled → disabled: the token is revoked, and every client's OAuth tokens with it.
      next = {
        ...(row ?? blank(actor.tenantId, now)),
        enabled: false,
        tokenHash: null,
        prefix: null,
        issuedAt: null,
        expiresAt: null,
        lastUsedAt: null,
        version: (row?.version ?? 0) + 1,
        updatedAt: now,
      }
      await revokeTenantTokens(tx, actor.tenantId, now)
      for (const c of await connectionsOf(tx, actor.tenantId)) await disconnect(tx, actor.tenantId, c.clientId, now)
    } else {
      const live = row?.enabled && row.tokenHash !== null
      const allowed = input.allowed_tools ?? (live ? row.allowedTools : [...READ_TOOLS])
      next = { ...(row ?? blank(actor.tenantId, now)), enabled: true, allowedTools: allowed, version: (row?.version ?? 0) + 1, updatedAt: now }
      if (!live || input.reissue) {
        // no token → enabled, or reissue: a new secret; permissions and connected clients untouched.
        token = generateSecret('gpuhq_mcp_')
        next = {
          ...next,
          tokenHash: hashSecret(token),
          prefix: token.slice(0, 'gpuhq_mcp_'.length + 4),
          issuedBy: actor.userId,
          issuedAt: now,
          expiresAt: now + TOKEN_DAYS * DAY_US,
          lastUsedAt: null,
        }
      } else if (input.allowed_tools) {
        // The member who rewrites the scopes answers for them from now on.
        next = { ...next, issuedBy: actor.userId }
      }
    }
    await saveAccess(tx, next)
    await recordAudit(tx, deps, audit, {
      operation: !input.enabled ? 'mcp.access.disable' : token ? (row?.enabled ? 'mcp.access.reissue' : 'mcp.access.enable') : 'mcp.access.update',
      targetKind: 'tenant',
      targetId: actor.tenantId,
    })
    return await accessView(deps, actor.tenantId, next, token)
  })
}

function blank(tenantId: string, now: number): AccessRow {
  return {
    tenantId,
    enabled: false,
    tokenHash: null,
    prefix: null,
    allowedTools: [],
    issuedBy: null,
    issuedAt: null,
    expiresAt: null,
    lastUsedAt: null,
    version: 0,
    updatedAt: now,
  }
}

export async function getClient({ deps, actor, clientId }: { deps: Deps; actor: Actor; clientId: string }) {
  const c = (await connectionsOf(deps.db, actor.tenantId)).find((x) => x.clientId === clientId.toLowerCase())
  if (!c) throw E.clientNotFound()
  return { id: c.clientId, name: c.name, connected_at: formatNullableTimestamp(c.connectedAt)!, last_used_at: formatNullableTimestamp(c.lastUsedAt) }
}

/** DELETE /mcp/clients/{id}: the client is disconnected and every token it holds stops working. */
export async function removeClient({ deps, actor, audit, clientId }: { deps: Deps; actor: Actor; audit: AuditContext; clientId: string }): Promise<void> {
  await withTransaction(deps.db, async (tx) => {
    if (!(await disconnect(tx, actor.tenantId, clientId.toLowerCase(), deps.clock.nowUs()))) throw E.clientNotFound()
    await recordAudit(tx, deps, audit, { operation: 'mcp.client.disconnect', targetKind: 'mcp_client', targetId: clientId.toLowerCase() })
  })
}

/** Who a gateway bearer token is: the actor its tools run as, the client (null for the tenant token), the tools it may call. */
export type McpCaller = {
  actor: Actor
  client: { id: string; name: string } | null
  /** Tools the owner allowed and the member's role covers. */
  allowedTools: readonly string[]
  /** Tools the owner allowed under AI access, whether the member's role covers them or not (to explain a refusal). */
  grantedTools: readonly string[]
  planAllows: boolean
  expiresAt: number | null
}

/**
 * Resolves a bearer token presented to the gateway (or GET /mcp/whoami): the tenant's `gpuhq_mcp_`
 * token, or an OAuth access token issued by POST /mcp/token for this resource. Null when unknown,
 * revoked, expired, issued for another resource, or when access is off.
 */
export async function resolveMcpToken(deps: Deps, token: string): Promise<McpCaller | null> {
  const now = deps.clock.nowUs()
  if (hasValidChecksum(token, 'gpuhq_mcp_')) {
    const row = await findAccessByHash(deps.db, hashSecret(token))
    if (!row?.enabled || !row.issuedBy || (row.expiresAt !== null && row.expiresAt <= now)) return null
    if (row.lastUsedAt === null || now - row.lastUsedAt > TOUCH_EVERY_US) await writeUnlessBusy(deps.db, (tx) => touchAccess(tx, row.tenantId, now))
    return await callerOf(deps, deps.db, row, row.issuedBy, null, `mcp:${row.tenantId}`, row.expiresAt)
  }
  if (hasValidChecksum(token, 'gpuhq_mcpat_')) {
    const t = await findToken(deps.db, hashSecret(token))
    if (t?.kind !== 'access' || t.revokedAt !== null || t.expiresAt <= now || t.resource !== gatewayUrl(deps)) return null
    const row = await findAccess(deps.db, t.tenantId)
    if (!row?.enabled || !(await findConnection(deps.db, t.tenantId, t.clientId))) return null
    await writeUnlessBusy(deps.db, (tx) => touchConnection(tx, t.tenantId, t.clientId, now))
    return await callerOf(deps, deps.db, row, t.userId, t.clientId, `mcp-client:${t.clientId}`, t.expiresAt)
  }
  return null
}

async function callerOf(
  deps: Deps,
  db: DbOrTx,
  row: AccessRow,
  userId: string,
  clientId: string | null,
  tokenId: string,
  expiresAt: number | null,
): Promise<McpCaller | null> {
  const user = await findUserById(db, userId)
  const tenant = await findTenant(db, row.tenantId)
  if (!user || !tenant || user.tenantId !== row.tenantId) return null
  const roleScopes = ROLE_SCOPES[user.role]
  const tools = TOOLS.filter((t) => row.allowedTools.includes(t.name) && roleScopes.includes(t.scope))
  // The connection was checked by the caller; only the client's name is wanted here.
  const client = clientId ? await findClient(db, clientId) : undefined
  return {
    actor: {
      kind: 'mcp',
      via: 'bearer',
      tenantId: row.tenantId,
      userId: user.id,
      role: user.role,
      tokenId,
      scopes: [...new Set(tools.map((t) => t.scope))],
      serverAllowlist: null,
      tenant: { planCode: tenant.planCode, accountState: tenant.accountState },
    },
    client: client ? { id: client.id, name: client.name } : null,
    allowedTools: tools.map((t) => t.name),
    grantedTools: [...row.allowedTools],
    planAllows: await planAllows(deps, tenant.planCode),
    expiresAt,
  }
}

/** GET /mcp/whoami: what the presented AI-assistant token is and may do. */
export async function whoami(deps: Deps, caller: McpCaller) {
  const tenant = (await findTenant(deps.db, caller.actor.tenantId))!
  return {
    tenant_id: caller.actor.tenantId,
    tenant_name: tenant.name,
    user_id: caller.actor.userId!,
    role: caller.actor.role!,
    token_kind: caller.client ? ('oauth' as const) : ('tenant' as const),
    client: caller.client,
    expires_at: formatNullableTimestamp(caller.expiresAt),
    endpoint: gatewayUrl(deps),
    allowed_tools: [...caller.allowedTools],
    available: caller.planAllows,
  }
}
