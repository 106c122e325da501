import { and, desc, eq, lt, type SQL } from 'drizzle-orm'
import { serverEvents, serverGroups, serverKeepOn } from '../../../db/schema'
import { withTransaction } from '../../../db/client'
import { mayAccessServer, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { decodeCursor, toPage } from '../../platform/cursor'
import { assertIfMatch, etagOf } from '../../platform/etag'
import { formatMoney, parseMoney } from '../../platform/money'
import { problems } from '../../platform/problem'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import type { AuditContext } from '../audit/audit.context'
import { recordAudit } from '../audit/audit.service'
import { eventView, recordServerEvent } from './events'
import { findServer, keepOnOf, latestMetricsOf, markFleetDirty, updateServer, type ServerRow } from './fleet.repository'
import { fleetRow, type FleetRow } from './snapshot.service'

/** A server of the actor's tenant that the actor may see; anything else is a plain 404. */
export function loadServer(deps: Deps, actor: Actor, id: string, db = deps.db): ServerRow {
  const server = findServer(db, actor.tenantId, id.toLowerCase())
  if (!server || !mayAccessServer(actor, server.id)) throw problems.notFound('no such server')
  return server
}

export function serverDetail(deps: Deps, server: ServerRow) {
  const metrics = latestMetricsOf(deps.db, [server.id])
  const byGpu = new Map<number, Map<string, number | null>>()
  const host: Record<string, { value: number | null; t: string }> = {}
  const gpus = new Map<number, Record<string, { value: number | null; t: string }>>()
  for (const m of metrics) {
    let vals = byGpu.get(m.gpuIndex)
    if (!vals) byGpu.set(m.gpuIndex, (vals = new Map()))
    vals.set(m.metric, m.value)
    const entry = { value: m.value, t: formatTimestamp(m.t) }
    if (m.gpuIndex < 0) host[m.metric] = entry
    else {
      let g = gpus.get(m.gpuIndex)
      if (!g) gpus.set(m.gpuIndex, (g = {}))
      g[m.metric] = entry
    }
  }
  const { _hostname, ...row } = fleetRow(server, byGpu)
  return {
    ...row,
    version: server.version,
    hostname: server.hostname,
    public_ip: server.publicIp,
    disk_gb: server.diskGb,
    port_range: server.portRange,
    gpus: JSON.parse(server.gpus) as { index: number; model: string }[],
    telemetry: { host, gpus: [...gpus].sort(([a], [b]) => a - b).map(([index, m]) => ({ index, metrics: m })) },
    keep_on: keepOnOf(deps.db, server.id),
    electricity_usd_per_kwh: server.electricityMicrosPerKwh === null ? null : formatMoney(server.electricityMicrosPerKwh),
    rental_active: server.rentalActive,
    last_hello_at: formatNullableTimestamp(server.lastHelloAt),
    enrolled_at: formatNullableTimestamp(server.enrolledAt),
    created_at: formatTimestamp(server.createdAt),
    decommissioned_at: formatNullableTimestamp(server.decommissionedAt),
  }
}

export type ServerPatchInput = { name?: string; group_id?: string | null; tags?: string[]; electricity_usd_per_kwh?: string | null; rental_active?: boolean }

export function updateServerConfig({
  deps,
  actor,
  audit,
  id,
  ifMatch,
  input,
}: {
  deps: Deps
  actor: Actor
  audit: AuditContext
  id: string
  ifMatch: string | null
  input: ServerPatchInput
}) {
  const server = withTransaction(deps.db, (tx) => {
    const server = loadServer(deps, actor, id, tx)
    assertIfMatch(ifMatch, etagOf(server.version))
    if (server.decommissionedAt !== null) throw problems.conflict('the server is decommissioned')
    const patch: Partial<ServerRow> = { version: server.version + 1 }
    if (input.name !== undefined) patch.name = input.name.trim()
    if (input.group_id !== undefined) {
      if (input.group_id !== null) {
        const group = tx
          .select()
          .from(serverGroups)
          .where(and(eq(serverGroups.tenantId, actor.tenantId), eq(serverGroups.id, input.group_id.toLowerCase())))
          .get()
        if (!group) throw problems.field('/group_id', 'unknown_group', 'no such group in this tenant')
        patch.groupId = group.id
      } else patch.groupId = null
    }
    if (input.tags !== undefined) patch.tags = JSON.stringify(input.tags)
    if (input.electricity_usd_per_kwh !== undefined) {
      const micros = input.electricity_usd_per_kwh === null ? null : parseMoney(input.electricity_usd_per_kwh)
      if (micros !== null && micros < 0) throw problems.field('/electricity_usd_per_kwh', 'too_small', 'the tariff cannot be negative')
      patch.electricityMicrosPerKwh = micros
    }
    if (input.rental_active !== undefined) {
      patch.rentalActive = input.rental_active
      patch.rentalSource = 'operator'
      patch.rentalUpdatedAt = deps.clock.nowUs()
    }
    updateServer(tx, server.id, patch)
    recordServerEvent(tx, deps, server, { kind: 'server.updated', message: `configuration changed: ${Object.keys(input).join(', ')}` })
    markFleetDirty(tx, actor.tenantId)
    recordAudit(tx, deps, audit, { operation: 'servers.update', targetKind: 'server', targetId: server.id })
    return { ...server, ...patch }
  })
  return serverDetail(deps, server)
}

export function declareMaintenance({ deps, actor, audit, id, reason }: { deps: Deps; actor: Actor; audit: AuditContext; id: string; reason: string | null }) {
  return withTransaction(deps.db, (tx) => {
    const server = loadServer(deps, actor, id, tx)
    if (server.decommissionedAt !== null) throw problems.conflict('the server is decommissioned')
    // Repeating the declaration keeps `since`; only the reason follows the latest call.
    const since = server.maintenanceSince ?? deps.clock.nowUs()
    updateServer(tx, server.id, { maintenanceSince: since, maintenanceReason: reason, version: server.version + 1 })
    if (server.maintenanceSince === null)
      recordServerEvent(tx, deps, server, {
        kind: 'maintenance.declared',
        message: reason ? `maintenance: ${reason}` : 'maintenance declared',
        data: { reason },
      })
    markFleetDirty(tx, actor.tenantId)
    recordAudit(tx, deps, audit, { operation: 'servers.maintenance.declare', targetKind: 'server', targetId: server.id })
    return { server_id: server.id, maintenance: { since: formatTimestamp(since), reason } }
  })
}

export function endMaintenance({ deps, actor, audit, id }: { deps: Deps; actor: Actor; audit: AuditContext; id: string }) {
  withTransaction(deps.db, (tx) => {
    const server = loadServer(deps, actor, id, tx)
    if (server.maintenanceSince === null) return
    updateServer(tx, server.id, { maintenanceSince: null, maintenanceReason: null, version: server.version + 1 })
    recordServerEvent(tx, deps, server, { kind: 'maintenance.ended', message: 'back in service' })
    markFleetDirty(tx, actor.tenantId)
    recordAudit(tx, deps, audit, { operation: 'servers.maintenance.end', targetKind: 'server', targetId: server.id })
  })
}

/** Revokes the agent credential, stops billing (no longer managed), keeps history. */
export function decommissionServer({ deps, actor, audit, id }: { deps: Deps; actor: Actor; audit: AuditContext; id: string }) {
  const server = withTransaction(deps.db, (tx) => {
    const server = loadServer(deps, actor, id, tx)
    if (server.decommissionedAt !== null) return server
    const patch = { decommissionedAt: deps.clock.nowUs(), agentTokenHash: null, presence: 'offline' as const, version: server.version + 1 }
    updateServer(tx, server.id, patch)
    recordServerEvent(tx, deps, server, {
      kind: 'server.decommissioned',
      severity: 'warning',
      message: 'decommissioned: agent credential revoked, no longer managed',
    })
    markFleetDirty(tx, actor.tenantId)
    recordAudit(tx, deps, audit, { operation: 'servers.decommission', targetKind: 'server', targetId: server.id })
    return { ...server, ...patch }
  })
  return serverDetail(deps, server)
}

export function setKeepOn({
  deps,
  actor,
  audit,
  id,
  marketplace,
  on,
}: {
  deps: Deps
  actor: Actor
  audit: AuditContext
  id: string
  marketplace: 'marketplace_a' | 'marketplace_b'
  on: boolean
}) {
  return withTransaction(deps.db, (tx) => {
    const server = loadServer(deps, actor, id, tx)
    if (on) {
      if (server.decommissionedAt !== null) throw problems.conflict('the server is decommissioned')
      tx.insert(serverKeepOn).values({ serverId: server.id, marketplace, tenantId: actor.tenantId, createdAt: deps.clock.nowUs() }).onConflictDoNothing().run()
    } else
      tx.delete(serverKeepOn)
        .where(and(eq(serverKeepOn.serverId, server.id), eq(serverKeepOn.marketplace, marketplace)))
        .run()
    recordAudit(tx, deps, audit, { operation: on ? 'servers.keep_on.set' : 'servers.keep_on.clear', targetKind: 'server', targetId: server.id })
    return { server_id: server.id, keep_on: keepOnOf(tx, server.id) }
  })
}

export function listServerEvents({
  deps,
  actor,
  id,
  input,
}: {
  deps: Deps
  actor: Actor
  id: string
  input: { cursor?: string; limit?: number; kind?: string }
}) {
  const server = loadServer(deps, actor, id)
  const limit = input.limit ?? 50
  const scope = `server-events:${server.id}:${input.kind ?? ''}`
  const before = input.cursor ? decodeCursor<{ id: string }>(deps.keys.cursor, scope, input.cursor).id : null
  const where: SQL[] = [eq(serverEvents.serverId, server.id)]
  if (input.kind) where.push(eq(serverEvents.kind, input.kind))
  if (before) where.push(lt(serverEvents.id, before))
  const rows = deps.db
    .select()
    .from(serverEvents)
    .where(and(...where))
    .orderBy(desc(serverEvents.id))
    .limit(limit + 1)
    .all()
  return toPage(rows, limit, (r) => ({ id: r.id }), { key: deps.keys.cursor, scope }, eventView)
}

export type ServerFilters = { presence?: string; fsm_state?: string; marketplace?: string; group_id?: string; tag?: string; q?: string }

/** Applies the GET /servers filters to snapshot rows (and a token's server allowlist). */
export function filterRows(rows: FleetRow[], actor: Actor, f: ServerFilters): FleetRow[] {
  const q = f.q?.toLowerCase()
  return rows.filter(
    (r) =>
      mayAccessServer(actor, r.id) &&
      (!f.presence || r.presence === f.presence) &&
      (!f.fsm_state || r.fsm_state === f.fsm_state) &&
      (!f.marketplace || r.marketplace === f.marketplace) &&
      (!f.group_id || r.group_id === f.group_id.toLowerCase()) &&
      (!f.tag || r.tags.some((t) => t === f.tag || (!f.tag!.includes(':') && t.startsWith(`${f.tag}:`)))) &&
      (!q || r.name.toLowerCase().includes(q) || (r._hostname ?? '').toLowerCase().includes(q)),
  )
}
