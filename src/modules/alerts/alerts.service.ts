import type { Static } from '@sinclair/typebox'
import { withTransaction, type DbOrTx } from '../../../db/client'
import { ensureReaches, mayAccessServer, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { paginate } from '../../platform/cursor'
import { formatNullableTimestamp, formatTimestamp, parseTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { notificationSummaries, type NotificationSummary } from '../notifications'
import { AlertErrors } from './alerts.errors'
import type { AlertsQuery, Kind, ResolveBody } from './alerts.model'
import type { IncidentCounts } from '../fleet'
import { findIncident, listIncidents, type IncidentRow, unresolvedCountsByServer, updateIncident } from './alerts.repository'
import { announce, clear } from './incidents'
import type { MarketplaceId } from '../marketplaces'

/**
 * The incident verbs (docs/alerts.md): list and read, acknowledge and resolve. An incident of a
 * server outside a token's allowlist does not exist for it (404, absent from lists), exactly like
 * another tenant's.
 */

/** The most linked notifications an answer shows (the latest). */
const SHOWN_NOTIFICATIONS = 100

function incidentView(i: IncidentRow, notifications: Map<string, NotificationSummary>) {
  return {
    id: i.id,
    kind: i.kind as Kind,
    cause_key: i.causeKey,
    severity: i.severity,
    state: i.state,
    server_id: i.serverId,
    marketplace: i.marketplace as MarketplaceId | null,
    title: i.title,
    detail: i.detail,
    opened_at: formatTimestamp(i.openedAt),
    last_seen_at: formatTimestamp(i.lastSeenAt),
    occurrences: i.occurrences,
    acknowledged_at: formatNullableTimestamp(i.acknowledgedAt),
    acknowledged_by: i.acknowledgedBy,
    resolved_at: formatNullableTimestamp(i.resolvedAt),
    resolved_by: i.resolvedBy,
    resolution: i.resolution,
    notifications: i.notificationIds
      .slice(-SHOWN_NOTIFICATIONS)
      .flatMap((id) => notifications.get(id) ?? [])
      .map((n) => ({ id: n.id, category: n.category, title: n.title, created_at: formatTimestamp(n.createdAt) })),
  }
}

/** Views of the rows with their linked notifications, read in one query. */
async function viewsOf(db: DbOrTx, tenantId: string, rows: IncidentRow[]) {
  const ids = rows.flatMap((r) => r.notificationIds.slice(-SHOWN_NOTIFICATIONS))
  const notifications = new Map((await notificationSummaries(db, tenantId, ids)).map((n) => [n.id, n]))
  return rows.map((r) => incidentView(r, notifications))
}

async function loadIncident(db: DbOrTx, actor: Actor, id: string): Promise<IncidentRow> {
  const row = await findIncident(db, actor.tenantId, id.toLowerCase())
  if (!row || (row.serverId !== null && !mayAccessServer(actor, row.serverId))) throw AlertErrors.notFound()
  return row
}

export async function listAlerts({ deps, actor, input }: { deps: Deps; actor: Actor; input: Static<typeof AlertsQuery> }) {
  const fromUs = input.since === undefined ? undefined : (parseTimestamp(input.since) ?? undefined)
  const toUs = input.until === undefined ? undefined : (parseTimestamp(input.until) ?? undefined)
  if (input.since !== undefined && fromUs === undefined) throw AlertErrors.badSince()
  if (input.until !== undefined && toUs === undefined) throw AlertErrors.badUntil()
  const filter = {
    state: input.state,
    kind: input.kind,
    severity: input.severity,
    serverId: input.server_id?.toLowerCase(),
    marketplace: input.marketplace,
    fromUs,
    toUs,
  }
  const page = await paginate(deps.keys.cursor, {
    scope: `alerts:${actor.tenantId}:${JSON.stringify(filter)}`,
    input,
    fetch: async (after: { id: string } | undefined, take) =>
      (await listIncidents(deps.db, actor.tenantId, { ...filter, allowlist: actor.serverAllowlist }, after?.id, take)).filter(
        (r) => r.serverId === null || mayAccessServer(actor, r.serverId),
      ),
    position: (r) => ({ id: r.id }),
    view: (r: IncidentRow) => r,
  })
  return { items: await viewsOf(deps.db, actor.tenantId, page.items), next_cursor: page.next_cursor }
}

export async function getAlert({ deps, actor, id }: { deps: Deps; actor: Actor; id: string }) {
  return (await viewsOf(deps.db, actor.tenantId, [await loadIncident(deps.db, actor, id)]))[0]!
}

type Change = { deps: Deps; actor: Actor; audit: AuditContext; id: string }

/** The member behind the call (a token's creator), or the token itself for a caller without one. */
const memberOf = (actor: Actor) => actor.userId ?? actor.tokenId ?? null

/** Acknowledging says someone is on it: it stays unresolved. Again: unchanged. A resolved incident: 409. */
export async function acknowledgeAlert({ deps, actor, audit, id }: Change) {
  return await withTransaction(deps.db, async (tx) => {
    let row = await loadIncident(tx, actor, id)
    ensureReaches(actor, row.serverId === null ? null : [row.serverId], 'an incident of the whole account')
    if (row.state === 'resolved') throw AlertErrors.alreadyResolved()
    if (row.state === 'open') {
      const patch = { state: 'acknowledged' as const, acknowledgedAt: deps.clock.nowUs(), acknowledgedBy: memberOf(actor) }
      await updateIncident(tx, row.id, patch)
      row = { ...row, ...patch }
      await announce(tx, deps, row, 'acknowledged', patch.acknowledgedBy, null)
    }
    await recordAudit(tx, deps, audit, { operation: 'alerts.acknowledge', targetKind: 'alert_incident', targetId: row.id })
    return (await viewsOf(tx, actor.tenantId, [row]))[0]!
  })
}

/** A member resolves it by hand, with an optional note. Resolved already (by anyone): unchanged. */
export async function resolveAlert({ deps, actor, audit, id, input }: Change & { input: Static<typeof ResolveBody> | null | undefined }) {
  return await withTransaction(deps.db, async (tx) => {
    let row = await loadIncident(tx, actor, id)
    ensureReaches(actor, row.serverId === null ? null : [row.serverId], 'an incident of the whole account')
    if (row.state !== 'resolved') row = await clear(tx, deps, row, input?.note?.trim() || 'resolved by a member', memberOf(actor))
    await recordAudit(tx, deps, audit, { operation: 'alerts.resolve', targetKind: 'alert_incident', targetId: row.id })
    return (await viewsOf(tx, actor.tenantId, [row]))[0]!
  })
}

/** Unresolved (open or acknowledged) incidents per server of the tenant, by severity: what a fleet row's health reads. */
export async function incidentsByServer(db: DbOrTx, tenantId: string): Promise<Map<string, IncidentCounts>> {
  const out = new Map<string, IncidentCounts>()
  for (const r of await unresolvedCountsByServer(db, tenantId)) {
    const c = out.get(r.serverId) ?? { critical: 0, warning: 0, info: 0 }
    c[r.severity] += r.n
    out.set(r.serverId, c)
  }
  return out
}
