import { mayAccessServer, type Actor } from '../../../platform/access'
import type { Deps } from '../../../platform/context'
import { loadServer, type ServerSummary } from '../../fleet'
import { liveMachines } from '../accounts/accounts.service'
import { normaliseGpuModel } from '../adapters/gpu-model'
import { linksOnMarketplace } from './links.repository'
import type { MachineFacts, MarketplaceId, RemoteMachine } from '../adapters/marketplaces.adapter'
import { MarketplaceErrors } from '../marketplaces.errors'
import { findAccount } from '../accounts/marketplaces.repository'

/**
 * Candidates (docs/marketplaces.md "Finding a server's machine"): the machines the tenant's account
 * has on a marketplace, read live (no cache), each ranked against one server's own facts from its
 * agent's registration. Five facts are compared; a fact missing on either side never matches.
 */

/** The most candidates one answer holds. */
const MAX_CANDIDATES = 512
/** How far the platform's disk figure may be from the server's own, as a fraction of the server's. */
const DISK_TOLERANCE = 0.15
/** At least this many agreeing facts highlight a candidate (it never binds). */
const SUGGESTED_AT = 3

/** The server's facts as the candidates answer shows them (`known`). */
export type KnownFacts = {
  hostname: string | null
  public_ip: string | null
  gpu: string | null
  gpu_count: number | null
  gpu_occupancy: string | null
  disk_gb: number | null
  port_range: string | null
}

type Evidence = { hostname: boolean; public_ip: boolean; gpu: boolean; disk: boolean; ports: boolean }

const text = (v: string | null, max: number): string | null => {
  const s = v?.trim() ?? ''
  return s === '' ? null : s.slice(0, max)
}

function knownFactsOf(server: Pick<ServerSummary, 'hostname' | 'publicIp' | 'gpuModel' | 'gpuCount' | 'gpus' | 'diskGb' | 'portRange'>): KnownFacts {
  const gpu = text(server.gpuModel, 128) ?? text(server.gpus[0]?.model ?? null, 128)
  return {
    hostname: text(server.hostname, 253),
    public_ip: text(server.publicIp, 45),
    gpu,
    // A server registered without GPUs (or not registered yet) has no count to compare.
    gpu_count: gpu === null || server.gpuCount <= 0 ? null : server.gpuCount,
    gpu_occupancy: null,
    disk_gb: server.diskGb !== null && server.diskGb > 0 ? server.diskGb : null,
    port_range: text(server.portRange, 32),
  }
}

/** How many ports "40000-40019" holds (20); a single port holds 1; anything else is unknown. */
export function portRangeSize(range: string | null): number | null {
  const m = range === null ? null : /^\s*(\d{1,5})\s*(?:-\s*(\d{1,5})\s*)?$/.exec(range)
  if (!m) return null
  const from = Number(m[1])
  const to = m[2] === undefined ? from : Number(m[2])
  return to >= from ? to - from + 1 : null
}

/**
 * Which facts agree between the server (`known`) and a machine. Each needs both sides: hostname
 * compared case-insensitively; public_ip exactly; gpu = the normalised model (gpu-model.ts, applied
 * to the server's model name) and the count both equal; disk within DISK_TOLERANCE of the
 * server's disk_gb; ports = the two ranges hold as many ports (their bounds are not compared).
 */
export function evidenceOf(known: KnownFacts, facts: MachineFacts): Evidence {
  const host = (s: string | null) => text(s, 253)?.toLowerCase() ?? null
  const knownModel = normaliseGpuModel(known.gpu)
  const size = portRangeSize(known.port_range)
  return {
    hostname: host(known.hostname) !== null && host(known.hostname) === host(facts.hostname),
    public_ip: known.public_ip !== null && known.public_ip.toLowerCase() === (text(facts.public_ip, 45)?.toLowerCase() ?? null),
    gpu: knownModel !== null && knownModel === facts.gpu_model && known.gpu_count !== null && known.gpu_count === facts.gpu_count,
    disk: known.disk_gb !== null && facts.disk_gb !== null && facts.disk_gb > 0 && Math.abs(facts.disk_gb - known.disk_gb) <= DISK_TOLERANCE * known.disk_gb,
    ports: size !== null && facts.port_range_size !== null && facts.port_range_size > 0 && size === facts.port_range_size,
  }
}

const byId = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true }) || (a < b ? -1 : a > b ? 1 : 0)

/** Ranks machines against the server: strongest first (matched descending, then the machine id), at most 512. */
function rankCandidates(known: KnownFacts, machines: RemoteMachine[], linkedServerOf: (machineId: string) => string | null) {
  return machines
    .map((m) => {
      const evidence = evidenceOf(known, m.facts)
      const matched = Object.values(evidence).filter(Boolean).length
      return {
        external_machine_id: m.externalMachineId.slice(0, 128),
        hostname: text(m.remote.hostname ?? m.facts.hostname, 253),
        gpu: text(m.remote.gpu_name, 128),
        gpu_count: m.remote.gpu_count ?? m.facts.gpu_count,
        gpu_occupancy: text(m.remote.gpu_occupancy, 64),
        linked_server_id: linkedServerOf(m.externalMachineId),
        evidence,
        matched,
        suggested: matched >= SUGGESTED_AT,
      }
    })
    .sort((a, b) => b.matched - a.matched || byId(a.external_machine_id, b.external_machine_id))
    .slice(0, MAX_CANDIDATES)
}

/**
 * GET /marketplaces/links/candidates: the server must be the caller's (404 otherwise), the
 * marketplace connected (409 otherwise). The platform is asked every time; its calls go to the
 * operations log under the server's id whatever their outcome.
 */
export async function listCandidates({ deps, actor, input }: { deps: Deps; actor: Actor; input: { server_id: string; marketplace: MarketplaceId } }) {
  const server = await loadServer(deps, actor, input.server_id)
  const account = await findAccount(deps.db, actor.tenantId, input.marketplace)
  if (!account) throw MarketplaceErrors.notConnectedHere()
  const machines = await liveMachines(deps, actor, account, server.id)
  // Who already holds each machine (the oldest link first, should two servers claim one).
  const holder = new Map<string, string>()
  for (const link of await linksOnMarketplace(deps.db, actor.tenantId, input.marketplace))
    if (!holder.has(link.externalMachineId)) holder.set(link.externalMachineId, link.serverId)
  const known = knownFactsOf(server)
  // A token limited to servers sees no machine another server holds (nor that server's id).
  const visible = machines.filter((m) => {
    const held = holder.get(m.externalMachineId)
    return held === undefined || mayAccessServer(actor, held)
  })
  return { candidates: rankCandidates(known, visible, (id) => holder.get(id) ?? null), known }
}
