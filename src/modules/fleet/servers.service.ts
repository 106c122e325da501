import type { Static } from '@sinclair/typebox'
import { withTransaction, type DbOrTx } from '../../../db/client'
import { mayAccessServer, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { paginate } from '../../platform/cursor'
import { invalidField } from '../../platform/domain-error'
import { assertIfMatch, etagOf } from '../../platform/etag'
import { formatMoney, parseMoneyInRange } from '../../platform/money'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { plausibleReading } from '../telemetry'
import { agentSessions } from './agent-sessions'
import { eventView, recordServerEvent } from './events'
import { noteRentalFact, rentalRunning, rentalSources } from './rentals'
import { FleetErrors } from './fleet.errors'
import {
  clearGroupOfServers,
  clearKeepOnRow,
  findServer,
  keepOnOf,
  latestMetricsOf,
  markSnapshotDirty,
  serverEventRows,
  setKeepOnRow,
  updateServer,
  xidCountsOfServer,
  type Marketplace,
  type ServerRow,
} from './fleet.repository'
import { clockEventReasons, pcieLinkDegraded } from './hardware'
import { factsOf, fleetRow } from './fleet.row'
import { summaryOf, type ServerSummary } from './servers.views'
import { rowFactsOf } from './row-facts'
import type { ServerEventsQuery, ServerPatch } from './servers.model'
import type { MarketplaceId } from '../../platform/marketplace-id'

/**
 * A group of the tenant, or undefined. Groups sit above the fleet (they count its servers), so the
 * composition root hands the fleet this lookup instead of the fleet importing groups.
 */
export type GroupLookup = (db: DbOrTx, tenantId: string, id: string) => Promise<{ id: string } | undefined>

/**
 * Where a fleet maintenance declaration could also be announced to renters: one entry per platform
 * the server is linked to (the marketplaces module's, handed in by the composition root).
 */
export type MaintenanceAnnouncements = (
  deps: Deps,
  tenantId: string,
  serverId: string,
) => Promise<{ marketplace: MarketplaceId; external_machine_id: string; supported: boolean; how: string }[]>

/** A server of the actor's tenant that the actor may see, the whole row (fleet's own verbs); anything else is a plain 404. */
async function loadServerRow(deps: Deps, actor: Actor, id: string, db: DbOrTx = deps.db): Promise<ServerRow> {
  const server = await findServer(db, actor.tenantId, id.toLowerCase())
  if (!server || !mayAccessServer(actor, server.id)) throw FleetErrors.serverNotFound()
  return server
}

/**
 * The one tenant-checked load-or-throw other modules use: a server of the actor's tenant that the
 * actor may see (decommissioned ones included), as its summary; anything else is a plain 404.
 */
export async function loadServer(deps: Deps, actor: Actor, id: string, db: DbOrTx = deps.db): Promise<ServerSummary> {
  return summaryOf(await loadServerRow(deps, actor, id, db))
}

/** Every server of a group (decommissioned ones too) lets go of it, before the group is deleted (groups' delete). */
export async function releaseGroup(tx: DbOrTx, groupId: string): Promise<void> {
  await clearGroupOfServers(tx, groupId)
}

/** The server's id when the actor may see it (telemetry's reads are scoped by it). */
export async function visibleServerId(deps: Deps, actor: Actor, id: string): Promise<string> {
  return (await loadServerRow(deps, actor, id)).id
}

/** The last days' margin of a server (the costs module's, handed in by the composition root). */
/** A server's recent margin (docs/earnings.md "Margin"): money text; a cost with no input at all is null. */
export type ServerMargin = {
  days: number
  from_day: string
  to_day: string
  earned_usd: string
  platform_cut_usd: string | null
  electricity_usd: string | null
  gpuhq_charges_usd: string
  margin_usd: string
  estimate: boolean
  missing: string[]
}
export type MarginLookup = (deps: Deps, tenantId: string, serverId: string) => Promise<ServerMargin>

export async function getServer({ deps, actor, id, margin }: { deps: Deps; actor: Actor; id: string; margin: MarginLookup }) {
  const server = await loadServerRow(deps, actor, id)
  // The margin carries gpuhq's charges: billing information, shown to whoever may read billing.
  const mayReadBilling = actor.serverAllowlist === null && (actor.scopes === null || actor.scopes.includes('billing:read'))
  return {
    etag: etagOf(server.version),
    body: async () => ({ ...(await serverDetail(deps, server)), ...(mayReadBilling ? { margin: await margin(deps, actor.tenantId, server.id) } : {}) }),
  }
}

async function serverDetail(deps: Deps, server: ServerRow) {
  const metrics = await latestMetricsOf(deps.db, [server.id])
  const byGpu = new Map<number, Map<string, number | null>>()
  const host: Record<string, { value: number | null; t: string }> = {}
  const gpus = new Map<number, Record<string, { value: number | null; t: string }>>()
  for (const m of metrics) {
    let vals = byGpu.get(m.gpuIndex)
    if (!vals) byGpu.set(m.gpuIndex, (vals = new Map()))
    vals.set(m.metric, m.value)
    const entry = { value: plausibleReading(m.metric, m.gpuIndex, m.value), t: formatTimestamp(m.t) }
    if (m.gpuIndex < 0) host[m.metric] = entry
    else {
      let g = gpus.get(m.gpuIndex)
      if (!g) gpus.set(m.gpuIndex, (g = {}))
      g[m.metric] = entry
    }
  }
  const { _hostname, ...row } = fleetRow(server, byGpu, factsOf(await rowFactsOf(deps, deps.db, server.tenantId, deps.clock.nowUs()), server.id))
  return {
    ...row,
    version: server.version,
    hostname: server.hostname,
    public_ip: server.publicIp,
    disk_gb: server.diskGb,
    port_range: server.portRange,
    gpus: server.gpus,
    host_details: server.hostDetails,
    gpu_health: gpuHealth(server, byGpu, await xidCountsOfServer(deps.db, server.id)),
    telemetry: { host, gpus: [...gpus].sort(([a], [b]) => a - b).map(([index, m]) => ({ index, metrics: m })) },
    keep_on: await keepOnOf(deps.db, server.id),
    electricity_usd_per_kwh: server.electricityMicrosPerKwh === null ? null : formatMoney(server.electricityMicrosPerKwh),
    rental_active: rentalRunning(server),
    rental_sources: rentalSources(server),
    last_hello_at: formatNullableTimestamp(server.lastHelloAt),
    enrolled_at: formatNullableTimestamp(server.enrolledAt),
    created_at: formatTimestamp(server.createdAt),
    decommissioned_at: formatNullableTimestamp(server.decommissionedAt),
  }
}

/**
 * Per GPU (the inventory's and any that reported readings): the link verdict, the clock event
 * reasons by name and the Xids counted (docs/agent.md "Health readings"). Xids the agent could not
 * tie to a GPU are listed under index null.
 */
function gpuHealth(server: ServerRow, readings: Map<number, Map<string, number | null>>, xids: Awaited<ReturnType<typeof xidCountsOfServer>>) {
  const indexes = [...new Set([...server.gpus.map((g) => g.index), ...[...readings.keys()].filter((i) => i >= 0)])].sort((a, b) => a - b).slice(0, 128)
  const xidsOf = (gpuIndex: number) =>
    xids.filter((x) => x.gpuIndex === gpuIndex).map((x) => ({ xid: x.xid, count: x.count, last_at: formatTimestamp(x.lastAt) }))
  const health: {
    index: number | null
    pcie_link_degraded: boolean | null
    clock_event_reasons: string[] | null
    xids: { xid: number; count: number; last_at: string }[]
  }[] = indexes.map((index) => {
    const values = readings.get(index) ?? new Map<string, number | null>()
    const plausible = new Map([...values].map(([metric, v]) => [metric, plausibleReading(metric, index, v)]))
    return {
      index,
      pcie_link_degraded: pcieLinkDegraded(
        server.gpus.find((g) => g.index === index),
        plausible,
      ),
      clock_event_reasons: clockEventReasons(plausible.get('clock_event_reasons')),
      xids: xidsOf(index),
    }
  })
  const unknown = xidsOf(-1)
  if (unknown.length) health.push({ index: null, pcie_link_degraded: null, clock_event_reasons: null, xids: unknown })
  return health
}

type Change = { deps: Deps; actor: Actor; audit: AuditContext; id: string }

export async function updateServerConfig({
  deps,
  actor,
  audit,
  id,
  ifMatch,
  input,
  groups,
}: Change & { ifMatch: string | null; input: Static<typeof ServerPatch>; groups: GroupLookup }) {
  const server = await withTransaction(deps.db, async (tx) => {
    const server = await loadServerRow(deps, actor, id, tx)
    assertIfMatch(ifMatch, etagOf(server.version))
    if (server.decommissionedAt !== null) throw FleetErrors.serverDecommissioned()
    const patch: Partial<ServerRow> = { version: server.version + 1 }
    if (input.name !== undefined) patch.name = input.name.trim()
    if (input.group_id !== undefined) {
      if (input.group_id !== null) {
        const group = await groups(tx, actor.tenantId, input.group_id.toLowerCase())
        if (!group) throw invalidField('fleet', '/group_id', 'unknown_group', 'no such group in this tenant')
        patch.groupId = group.id
      } else patch.groupId = null
    }
    if (input.tags !== undefined) patch.tags = input.tags
    if (input.electricity_usd_per_kwh !== undefined) {
      // The cost basis's bound (docs/earnings.md "Bounds"): keeps the margin and the pricing floor inside the money range.
      const tariff = input.electricity_usd_per_kwh
      const micros = tariff === null ? null : (parseMoneyInRange(tariff) ?? (tariff.startsWith('-') ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY))
      if (micros !== null && micros < 0) throw invalidField('fleet', '/electricity_usd_per_kwh', 'too_small', 'the tariff cannot be negative')
      if (micros !== null && micros > 10_000_000) throw invalidField('fleet', '/electricity_usd_per_kwh', 'too_large', 'at most 10.00 USD per kWh')
      patch.electricityMicrosPerKwh = micros
    }
    if (input.rental_active !== undefined) {
      await noteRentalFact(tx, deps, server, input.rental_active, 'operator')
      patch.rentalActive = input.rental_active
      patch.rentalSource = 'operator'
      patch.rentalUpdatedAt = deps.clock.nowUs()
    }
    await updateServer(tx, server.id, patch)
    await recordServerEvent(tx, deps, server, { kind: 'server.updated', message: `configuration changed: ${Object.keys(input).join(', ')}` })
    await markSnapshotDirty(tx, actor.tenantId)
    await recordAudit(tx, deps, audit, { operation: 'servers.update', targetKind: 'server', targetId: server.id })
    return { ...server, ...patch }
  })
  // A rental that ended may release commands waiting for it.
  if (input.rental_active === false) await deps.events.emit('server.rental_ended', { serverId: server.id })
  return serverDetail(deps, server)
}

export async function declareMaintenance({
  deps,
  actor,
  audit,
  id,
  reason,
  announcements,
}: Change & { reason: string | null; announcements: MaintenanceAnnouncements }) {
  const declared = await withTransaction(deps.db, async (tx) => {
    const server = await loadServerRow(deps, actor, id, tx)
    if (server.decommissionedAt !== null) throw FleetErrors.serverDecommissioned()
    // Repeating the declaration keeps `since`; only the reason follows the latest call.
    const since = server.maintenanceSince ?? deps.clock.nowUs()
    await updateServer(tx, server.id, { maintenanceSince: since, maintenanceReason: reason, version: server.version + 1 })
    if (server.maintenanceSince === null)
      await recordServerEvent(tx, deps, server, {
        kind: 'maintenance.declared',
        message: reason ? `maintenance: ${reason}` : 'maintenance declared',
        data: { reason },
      })
    await markSnapshotDirty(tx, actor.tenantId)
    await recordAudit(tx, deps, audit, { operation: 'servers.maintenance.declare', targetKind: 'server', targetId: server.id })
    return { server_id: server.id, maintenance: { since: formatTimestamp(since), reason } }
  })
  // Declaring fleet maintenance announces nothing to renters by itself: it offers where to.
  return { ...declared, announce_on: await announcements(deps, actor.tenantId, declared.server_id) }
}

export async function endMaintenance({ deps, actor, audit, id }: Change) {
  await withTransaction(deps.db, async (tx) => {
    const server = await loadServerRow(deps, actor, id, tx)
    if (server.maintenanceSince === null) return
    await updateServer(tx, server.id, { maintenanceSince: null, maintenanceReason: null, version: server.version + 1 })
    await recordServerEvent(tx, deps, server, { kind: 'maintenance.ended', message: 'back in service' })
    await markSnapshotDirty(tx, actor.tenantId)
    await recordAudit(tx, deps, audit, { operation: 'servers.maintenance.end', targetKind: 'server', targetId: server.id })
  })
}

/** Revokes the agent credential (its live session is closed), stops billing (no longer managed), keeps history. */
export async function decommissionServer({ deps, actor, audit, id }: Change) {
  const server = await withTransaction(deps.db, async (tx) => {
    const server = await loadServerRow(deps, actor, id, tx)
    if (server.decommissionedAt !== null) return server
    const patch = { decommissionedAt: deps.clock.nowUs(), agentTokenHash: null, presence: 'offline' as const, version: server.version + 1 }
    await updateServer(tx, server.id, patch)
    await recordServerEvent(tx, deps, server, {
      kind: 'server.decommissioned',
      severity: 'warning',
      message: 'decommissioned: agent credential revoked, no longer managed',
    })
    await markSnapshotDirty(tx, actor.tenantId)
    await recordAudit(tx, deps, audit, { operation: 'servers.decommission', targetKind: 'server', targetId: server.id })
    return { ...server, ...patch }
  })
  agentSessions(deps).close(server.id, 4410, 'server decommissioned')
  return serverDetail(deps, server)
}

export function setKeepOn({ deps, actor, audit, id, marketplace, on }: Change & { marketplace: Marketplace; on: boolean }) {
  return withTransaction(deps.db, async (tx) => {
    const server = await loadServerRow(deps, actor, id, tx)
    if (on) {
      if (server.decommissionedAt !== null) throw FleetErrors.serverDecommissioned()
      await setKeepOnRow(tx, { serverId: server.id, marketplace, tenantId: actor.tenantId, createdAt: deps.clock.nowUs() })
    } else await clearKeepOnRow(tx, server.id, marketplace)
    await recordAudit(tx, deps, audit, { operation: on ? 'servers.keep_on.set' : 'servers.keep_on.clear', targetKind: 'server', targetId: server.id })
    return { server_id: server.id, keep_on: await keepOnOf(tx, server.id) }
  })
}

export async function listServerEvents({ deps, actor, id, input }: { deps: Deps; actor: Actor; id: string; input: Static<typeof ServerEventsQuery> }) {
  const server = await loadServerRow(deps, actor, id)
  return paginate(deps.keys.cursor, {
    scope: `server-events:${server.id}:${input.kind ?? ''}`,
    input,
    fetch: (before: { id: string } | undefined, take) => serverEventRows(deps.db, server.id, { kind: input.kind, beforeId: before?.id }, take),
    position: (r) => ({ id: r.id }),
    view: eventView,
  })
}
