import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { generateSecret, hashSecret, hasValidChecksum } from '../../platform/secrets'
import { stripUnsafeText } from '../../platform/text'
import {
  agentSessions,
  enrolServer,
  recordHostFacts,
  recordServerEvent,
  reenrolServer,
  serverByAgentToken,
  serverByFingerprint,
  serverOfTenant,
  type HostFacts,
} from '../fleet'
import { findTenant } from '../tenants'
import { assertRoomForServer, claimInitToken, revokeSiblingInitTokens, setInitTokenServer } from '../tokens'
import { AgentErrors } from './agent.errors'
import type { HostFactsInput, RegisterBody } from './agent.model'

/**
 * Enrolment (docs/fleet.md "Enrolment"): the init token is claimed exactly once, inside the transaction
 * that attaches or creates the server, so a refused enrolment (old agent, frozen account, full
 * plan) leaves it unclaimed. Re-enrolling replaces the server's agent credential at once.
 */
export const HEARTBEAT_INTERVAL_S = 15
export const TELEMETRY_INTERVAL_S = 10

export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[-+]/)[0]!.split('.').map(Number)
  const pb = b.split(/[-+]/)[0]!.split('.').map(Number)
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0)
  return 0
}

function assertAgentVersion(deps: Deps, version: string): void {
  if (compareVersions(version, deps.config.minAgentVersion) < 0)
    throw AgentErrors.unsupportedVersion(`agent ${version} is older than the minimum ${deps.config.minAgentVersion}; update the agent`)
}

function wsUrl(publicUrl: string): string {
  return publicUrl.replace(/^http/, 'ws') + '/api/v1/agent/ws'
}

/** What an agent reports, as shown to people: control and bidi characters stripped (text.ts). */
function reportedHostname(input: HostFactsInput): string {
  return stripUnsafeText(input.hostname).trim() || 'unnamed'
}

const stripped = (s: string | null | undefined) => (s === undefined || s === null ? null : stripUnsafeText(s))

const HOST_DETAILS = [
  'driver_version',
  'cuda_version',
  'cpu_cores',
  'ram_mb',
  'disk_free_gb',
  'docker_version',
  'docker_root',
  'docker_disk_free_gb',
  'nvidia_container_toolkit_version',
] as const

/** The host's details as reported (docs/agent.md "Facts"): null when the agent reports none of them (an older or simulated agent). */
function hostDetails(input: HostFactsInput): HostFacts['hostDetails'] {
  if (HOST_DETAILS.every((k) => input[k] === undefined)) return null
  const text = (v: string | null | undefined) => stripped(v)?.trim() || null
  return {
    driver_version: text(input.driver_version),
    cuda_version: text(input.cuda_version),
    cpu_cores: input.cpu_cores ?? null,
    ram_mb: input.ram_mb ?? null,
    disk_free_gb: input.disk_free_gb ?? null,
    docker_version: text(input.docker_version),
    docker_root: text(input.docker_root),
    docker_disk_free_gb: input.docker_disk_free_gb ?? null,
    nvidia_container_toolkit_version: text(input.nvidia_container_toolkit_version),
  }
}

export function hostFacts(input: HostFactsInput): HostFacts {
  const gpus = [...input.gpus]
    .sort((a, b) => a.index - b.index)
    .map((g) => ({
      ...g,
      model: stripUnsafeText(g.model),
      ...(g.uuid !== undefined ? { uuid: stripped(g.uuid) } : {}),
      ...(g.pci_bus_id !== undefined ? { pci_bus_id: stripped(g.pci_bus_id) } : {}),
      ...(g.vbios_version !== undefined ? { vbios_version: stripped(g.vbios_version) } : {}),
    }))
  const models = [...new Set(gpus.map((g) => g.model))]
  return {
    hostname: reportedHostname(input),
    agentVersion: input.agent_version,
    // An identifier matched on re-enrolment, never displayed: kept exactly as reported.
    fingerprint: input.fingerprint ?? null,
    publicIp: stripped(input.public_ip),
    diskGb: input.disk_gb ?? null,
    portRange: stripped(input.port_range),
    gpus,
    hostDetails: hostDetails(input),
    gpuCount: gpus.length,
    gpuModel: models.length === 0 ? '' : models.length === 1 ? models[0]! : models.join(' + ').slice(0, 128),
  }
}

/** Enrols an agent; the server's previous credential stops working at once, including a session it holds open. */
export async function registerAgent({ deps, input }: { deps: Deps; input: Static<typeof RegisterBody> }) {
  assertAgentVersion(deps, input.agent_version)
  const agentToken = generateSecret('gpuhq_agt_')
  const result = await withTransaction(deps.db, async (tx) => {
    const token = await claimInitToken(tx, deps, input.init_token)
    if (!token) throw AgentErrors.initTokenRefused()
    const tenant = await findTenant(tx, token.tenantId)
    if (tenant?.accountState === 'frozen') throw AgentErrors.accountFrozen()
    const now = deps.clock.nowUs()
    let server: { id: string; tenantId: string } | undefined
    if (token.serverId) {
      const bound = await serverOfTenant(tx, token.tenantId, token.serverId)
      if (!bound || bound.decommissionedAt !== null) throw AgentErrors.initTokenRefused()
      server = bound
    } else if (input.fingerprint) {
      server = await serverByFingerprint(tx, token.tenantId, input.fingerprint)
    }
    const facts = hostFacts(input)
    if (server) {
      await reenrolServer(tx, server, { facts, agentTokenHash: hashSecret(agentToken), at: now })
    } else {
      await assertRoomForServer(tx, token.tenantId, now, 1, false)
      const id = await enrolServer(tx, deps, {
        tenantId: token.tenantId,
        name: reportedHostname(input).slice(0, 128),
        facts,
        agentTokenHash: hashSecret(agentToken),
        at: now,
      })
      server = { id, tenantId: token.tenantId }
    }
    await setInitTokenServer(tx, token.id, server.id)
    await revokeSiblingInitTokens(tx, server.id, token.id, now)
    await recordServerEvent(
      tx,
      deps,
      { id: server.id, tenantId: token.tenantId },
      {
        kind: 'agent.enrolled',
        message: `agent ${input.agent_version} enrolled from ${reportedHostname(input)}`,
        data: { init_token_id: token.id, bound: token.serverId !== null },
      },
    )
    return { serverId: server.id }
  })
  agentSessions(deps).close(result.serverId, 4401, 'agent credential replaced')
  return {
    server_id: result.serverId,
    agent_token: agentToken,
    ws_url: wsUrl(deps.config.publicUrl),
    heartbeat_interval_s: HEARTBEAT_INTERVAL_S,
    telemetry_interval_s: TELEMETRY_INTERVAL_S,
  }
}

/** The actor behind an agent credential, or null (checksum refused before any lookup). */
export async function resolveAgent(deps: Deps, token: string): Promise<Actor | null> {
  if (!hasValidChecksum(token, 'gpuhq_agt_')) return null
  const server = await serverByAgentToken(deps.db, hashSecret(token))
  if (!server) return null
  const tenant = await findTenant(deps.db, server.tenantId)
  if (!tenant) return null
  return {
    kind: 'agent',
    via: 'bearer',
    tenantId: server.tenantId,
    userId: null,
    role: null,
    tokenId: server.id,
    scopes: [],
    serverAllowlist: [server.id],
    tenant: { planCode: tenant.planCode, accountState: tenant.accountState },
  }
}

/** POST /agent/hello: the agent is alive over HTTPS. It never makes the server online. */
export async function agentHello({ deps, actor, input }: { deps: Deps; actor: Actor; input: HostFactsInput }) {
  assertAgentVersion(deps, input.agent_version)
  const serverId = actor.tokenId!
  await withTransaction(deps.db, async (tx) => {
    const server = await serverOfTenant(tx, actor.tenantId, serverId)
    if (!server) throw AgentErrors.serverNotFound()
    await recordHostFacts(tx, server, hostFacts(input), deps.clock.nowUs())
  })
}
