import type { DbOrTx, Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { notificationsInGroups, notificationsOfGroupKeys } from '../notifications'
import { type Kind, type Severity, SEVERITIES } from './alerts.model'
import {
  findUnresolved,
  findUnresolvedOfKeys,
  insertIncident,
  insertIncidents,
  type IncidentRow,
  lastResolvedAt,
  lastResolvedAtOfKeys,
  updateIncident,
  updateIncidents,
} from './alerts.repository'
import type { MarketplaceId } from '../marketplaces'

/**
 * An incident's life (docs/alerts.md): a cause is raised (opened, or counted again in its unresolved
 * incident), its notifications are linked, and it is cleared (resolved) when the cause goes away or a
 * member says so. Every function here runs in the caller's transaction: a reaction's, so the incident
 * commits with the event that caused it, or one the evaluator or a verb opened.
 */

export type Cause = {
  tenantId: string
  kind: Kind
  /** One unresolved incident per (tenant, key): `offline:<server>`, `temperature:<server>:<gpu>`, … */
  key: string
  severity: Severity
  serverId: string | null
  marketplace: MarketplaceId | null
  title: string
  detail: string
}

export type Outcome = 'opened' | 'repeated' | 'unchanged'

const higher = (a: Severity, b: Severity): Severity => (SEVERITIES.indexOf(a) >= SEVERITIES.indexOf(b) ? a : b)

/**
 * Opens the cause's incident, or counts a repeat in the unresolved one. `observedAt` is when the cause
 * was seen (an event: now; a threshold: the reading, failure or sync that showed it): an observation
 * not newer than the last one counted changes nothing, so evaluating the same state twice is a no-op,
 * and an incident a member resolved stays resolved until the cause is seen again after that.
 */
export async function raise(tx: DbOrTx, deps: Deps, cause: Cause, observedAt = deps.clock.nowUs()): Promise<Outcome> {
  const now = deps.clock.nowUs()
  if (!(await isNews(tx, deps, cause, observedAt))) return 'unchanged'
  const open = await findUnresolved(tx, cause.tenantId, cause.key)
  if (open) {
    const next = {
      occurrences: open.occurrences + 1,
      lastSeenAt: observedAt,
      severity: higher(open.severity, cause.severity),
      title: cause.title.slice(0, 256),
      detail: cause.detail.slice(0, 1024),
    }
    await updateIncident(tx, open.id, next)
    await linkNotifications(tx, deps, { ...open, ...next })
    return 'repeated'
  }
  const row = openedRow(deps, cause, now, observedAt)
  await insertIncident(tx, row)
  await linkNotifications(tx, deps, row)
  await announce(tx, deps, row, 'opened', null, null)
  return 'opened'
}

/**
 * Raises several causes seen together (the servers of a presence flush gone offline), each at most
 * once: for each, in the order given, exactly what raise does with an observation made now, with per
 * tenant one read of the causes' open incidents, one of their last resolutions, one of the
 * notifications to link, and the new incidents written in multi-row statements (already linked: the
 * row raise would insert and then link). A cause whose incident is open is raised alone (a repeat).
 */
export async function raiseMany(tx: DbOrTx, deps: Deps, causes: readonly Cause[]): Promise<Outcome[]> {
  const byTenant = new Map<string, number[]>()
  for (const [n, c] of causes.entries()) {
    const list = byTenant.get(c.tenantId)
    if (list) list.push(n)
    else byTenant.set(c.tenantId, [n])
  }
  const outcomes: Outcome[] = causes.map(() => 'unchanged')
  for (const [tenantId, indexes] of byTenant) {
    const observedAt = deps.clock.nowUs()
    const now = deps.clock.nowUs()
    const keys = indexes.map((n) => causes[n]!.key)
    const open = new Map((await findUnresolvedOfKeys(tx, tenantId, keys)).map((i) => [i.causeKey, i]))
    const closed = keys.filter((k) => !open.has(k))
    const resolvedAt = closed.length ? await lastResolvedAtOfKeys(tx, tenantId, closed, now) : new Map<string, number>()
    const rows: IncidentRow[] = []
    // A cause whose groups are prefixes, or one given twice, is raised alone, after the others.
    const alone: number[] = []
    const seen = new Set<string>()
    for (const n of indexes) {
      const cause = causes[n]!
      if (seen.has(cause.key) || notificationGroups(cause)?.prefixes.length) {
        alone.push(n)
        continue
      }
      seen.add(cause.key)
      const isOpen = open.get(cause.key)
      if (isOpen) {
        if (observedAt > isOpen.lastSeenAt) outcomes[n] = await raise(tx, deps, cause, observedAt)
        continue
      }
      const before = resolvedAt.get(cause.key)
      if (before !== undefined && !(observedAt > before)) continue
      rows.push(openedRow(deps, cause, now, observedAt))
      outcomes[n] = 'opened'
    }
    if (rows.length === 0) {
      for (const n of alone) outcomes[n] = await raise(tx, deps, causes[n]!)
      continue
    }
    // What linkNotifications stores for each (notificationLinks), read at once: the notifications of
    // its groups from LOOKBACK_US before it opened until now, none sent before the cause's last resolution.
    const linkable = rows.map((row) => ({ row, keys: notificationGroups(row)?.keys ?? [] }))
    const byKey = new Map<string, { id: string; createdAt: number }[]>()
    for (const x of await notificationsOfGroupKeys(tx, tenantId, [...new Set(linkable.flatMap((l) => l.keys))], now - LOOKBACK_US, now)) {
      const list = byKey.get(x.groupKey)
      if (list) list.push(x)
      else byKey.set(x.groupKey, [x])
    }
    for (const { row, keys: groupKeys } of linkable) {
      const before = resolvedAt.get(row.causeKey)
      row.notificationIds = groupKeys
        .flatMap((k) => byKey.get(k) ?? [])
        .filter((x) => x.createdAt >= row.openedAt - LOOKBACK_US && (before === undefined || x.createdAt > before))
        .sort((p, q) => p.createdAt - q.createdAt || (p.id < q.id ? -1 : p.id > q.id ? 1 : 0))
        .map((x) => x.id)
    }
    await insertIncidents(tx, rows)
    await announceMany(
      tx,
      deps,
      rows.map((row) => ({ incident: row, change: 'opened' as const, by: null, resolution: null })),
    )
    for (const n of alone) outcomes[n] = await raise(tx, deps, causes[n]!)
  }
  return outcomes
}

/** The incident raise opens for a cause seen at `observedAt`. */
function openedRow(deps: Deps, cause: Cause, now: number, observedAt: number): IncidentRow {
  return {
    id: deps.newId(),
    tenantId: cause.tenantId,
    kind: cause.kind,
    causeKey: cause.key,
    severity: cause.severity,
    serverId: cause.serverId,
    marketplace: cause.marketplace,
    title: cause.title.slice(0, 256),
    detail: cause.detail.slice(0, 1024),
    state: 'open',
    openedAt: now,
    // Never before it opened, so the observation that opened it is not counted again.
    lastSeenAt: Math.max(now, observedAt),
    occurrences: 1,
    acknowledgedAt: null,
    acknowledgedBy: null,
    resolvedAt: null,
    resolvedBy: null,
    resolution: null,
    notificationIds: [],
  }
}

/** Whether raising the cause with this observation would change anything (a read: the evaluator asks before it writes). */
export async function isNews(db: DbOrTx, deps: Deps, cause: Pick<Cause, 'tenantId' | 'key'>, observedAt: number): Promise<boolean> {
  const open = await findUnresolved(db, cause.tenantId, cause.key)
  if (open) return observedAt > open.lastSeenAt
  const resolvedAt = await lastResolvedAt(db, cause.tenantId, cause.key, deps.clock.nowUs())
  return resolvedAt === null || observedAt > resolvedAt
}

/** Resolves an unresolved incident: `by` is the member who did, null when the cause cleared. */
export async function clear(tx: DbOrTx, deps: Deps, incident: IncidentRow, resolution: string, by: string | null = null): Promise<IncidentRow> {
  const now = deps.clock.nowUs()
  // The last notifications produced while it was open are linked before the window closes.
  const notificationIds = await linkNotifications(tx, deps, incident, now)
  const patch = { state: 'resolved' as const, resolvedAt: now, resolvedBy: by, resolution: resolution.slice(0, 1024) }
  await updateIncident(tx, incident.id, patch)
  const resolved = { ...incident, ...patch, notificationIds }
  await announce(tx, deps, resolved, 'resolved', by, resolved.resolution)
  return resolved
}

/** Says that an incident opened, was acknowledged or resolved (`alert.changed`, in the caller's transaction). */
export async function announce(
  tx: DbOrTx,
  deps: Deps,
  i: IncidentRow,
  change: 'opened' | 'acknowledged' | 'resolved',
  by: string | null,
  resolution: string | null,
): Promise<void> {
  await deps.events.emit('alert.changed', {
    tx: tx as Tx,
    incident: { id: i.id, tenantId: i.tenantId, serverId: i.serverId, kind: i.kind, severity: i.severity, marketplace: i.marketplace, title: i.title },
    change,
    by,
    resolution,
  })
}

/** What announce says of several incidents at once, in order (`alerts.changed`, in the caller's transaction). */
async function announceMany(
  tx: DbOrTx,
  deps: Deps,
  list: readonly { incident: IncidentRow; change: 'opened' | 'acknowledged' | 'resolved'; by: string | null; resolution: string | null }[],
): Promise<void> {
  if (list.length === 0) return
  await deps.events.emit('alerts.changed', {
    tx: tx as Tx,
    changes: list.map(({ incident: i, change, by, resolution }) => ({
      incident: { id: i.id, tenantId: i.tenantId, serverId: i.serverId, kind: i.kind, severity: i.severity, marketplace: i.marketplace, title: i.title },
      change,
      by,
      resolution,
    })),
  })
}

/** Resolves the cause's unresolved incident, if there is one. */
export async function clearCause(tx: DbOrTx, deps: Deps, tenantId: string, key: string, resolution: string): Promise<boolean> {
  const open = await findUnresolved(tx, tenantId, key)
  if (open) await clear(tx, deps, open, resolution)
  return open !== undefined
}

/**
 * Resolves the unresolved incidents of several causes that went away together (the servers of a
 * presence flush back online): for each exactly what clearCause does, in the order given, with per
 * tenant one read of the open incidents, one of their notifications and one multi-row resolve.
 * Answers how many were resolved.
 */
export async function clearCauses(tx: DbOrTx, deps: Deps, causes: readonly { tenantId: string; key: string }[], resolution: string): Promise<number> {
  const byTenant = new Map<string, string[]>()
  for (const c of causes) {
    const keys = byTenant.get(c.tenantId)
    if (keys) keys.push(c.key)
    else byTenant.set(c.tenantId, [c.key])
  }
  const now = deps.clock.nowUs()
  const patch = { state: 'resolved' as const, resolvedAt: now, resolvedBy: null, resolution: resolution.slice(0, 1024) }
  let resolved = 0
  for (const [tenantId, keys] of byTenant) {
    const order = new Map(keys.map((k, n) => [k, n]))
    const open = (await findUnresolvedOfKeys(tx, tenantId, keys)).sort((a, b) => order.get(a.causeKey)! - order.get(b.causeKey)!)
    if (open.length === 0) continue
    // The last notifications produced while each was open are linked before its window closes.
    const links = await notificationLinksOf(tx, tenantId, open, now)
    for (const i of open) {
      const ids = links.get(i.id)!
      if (ids.length !== i.notificationIds.length) await updateIncident(tx, i.id, { notificationIds: ids })
    }
    await updateIncidents(
      tx,
      open.map((i) => i.id),
      patch,
    )
    await announceMany(
      tx,
      deps,
      open.map((i) => ({
        incident: { ...i, ...patch, notificationIds: links.get(i.id)! },
        change: 'resolved' as const,
        by: null,
        resolution: patch.resolution,
      })),
    )
    resolved += open.length
  }
  return resolved
}

/**
 * What notificationLinks answers for each of the tenant's `incidents` (by id), the notifications
 * of causes with plain group keys read in one statement for all of them.
 */
async function notificationLinksOf(db: DbOrTx, tenantId: string, incidents: readonly IncidentRow[], toUs: number): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>()
  const plain: { incident: IncidentRow; keys: string[] }[] = []
  for (const incident of incidents) {
    const groups = notificationGroups(incident)
    if (!groups) out.set(incident.id, incident.notificationIds)
    else if (groups.prefixes.length) out.set(incident.id, await notificationLinks(db, incident, toUs))
    else plain.push({ incident, keys: groups.keys })
  }
  if (plain.length === 0) return out
  const from = plain.reduce((m, p) => Math.min(m, p.incident.openedAt), Number.POSITIVE_INFINITY) - LOOKBACK_US
  const byKey = new Map<string, { id: string; createdAt: number }[]>()
  for (const n of await notificationsOfGroupKeys(db, tenantId, [...new Set(plain.flatMap((p) => p.keys))], from, toUs)) {
    const list = byKey.get(n.groupKey)
    if (list) list.push(n)
    else byKey.set(n.groupKey, [n])
  }
  for (const { incident, keys } of plain) {
    const linked = new Set(incident.notificationIds)
    let found = keys
      .flatMap((k) => byKey.get(k) ?? [])
      .filter((n) => n.createdAt >= incident.openedAt - LOOKBACK_US && !linked.has(n.id))
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    if (found.length === 0) {
      out.set(incident.id, incident.notificationIds)
      continue
    }
    // Only news costs the look for an earlier incident of the cause, whose notifications are its own.
    const before = await lastResolvedAt(db, incident.tenantId, incident.causeKey, incident.openedAt)
    if (before !== null) found = found.filter((n) => n.createdAt > before)
    out.set(incident.id, [...incident.notificationIds, ...found.map((n) => n.id)])
  }
  return out
}

/**
 * The notification groups each cause's producer uses (src/modules/notifications/producers.ts and
 * temperature.ts); marketplace errors and stale links have no producer, so nothing to link.
 */
function notificationGroups(i: { kind: string; causeKey?: string; key?: string }): { keys: string[]; prefixes: string[] } | null {
  const key = i.causeKey ?? i.key ?? ''
  const rest = key.slice(key.indexOf(':') + 1)
  if (i.kind === 'offline') return { keys: [`offline:${rest}`], prefixes: [] }
  if (i.kind === 'temperature') return { keys: [`temp:${rest}`], prefixes: [] }
  if (i.kind === 'agent_error') return { keys: [`error:${rest}`], prefixes: [] }
  if (i.kind === 'readiness') return { keys: [`readiness:${rest}`], prefixes: [] }
  if (i.kind === 'renter_report') return { keys: [`renter-report:${rest}`], prefixes: [] }
  if (i.kind === 'low_balance') return { keys: ['account:grace', 'account:frozen'], prefixes: ['balance-low:'] }
  if (i.kind === 'payout_gap') return { keys: [], prefixes: ['payout-gap:'] }
  return null
}

/** How long before its opening a notification of the cause may have been sent (the notifier's grouping window). */
const LOOKBACK_US = 30 * 60 * 1_000_000

/**
 * Links the notifications the cause produced from shortly before the incident opened (the same event,
 * or a threshold the notifier saw first) until `toUs`, never one sent before an earlier incident of
 * the cause was resolved (that one is the earlier incident's). Answers the linked ids.
 */
export async function linkNotifications(tx: DbOrTx, deps: Deps, incident: IncidentRow, toUs = incident.resolvedAt ?? deps.clock.nowUs()): Promise<string[]> {
  const ids = await notificationLinks(tx, incident, toUs)
  if (ids.length !== incident.notificationIds.length) await updateIncident(tx, incident.id, { notificationIds: ids })
  return ids
}

/** The ids linkNotifications would store (a read: the evaluator asks before it writes). */
export async function notificationLinks(db: DbOrTx, incident: IncidentRow, toUs: number): Promise<string[]> {
  const groups = notificationGroups(incident)
  if (!groups) return incident.notificationIds
  const linked = new Set(incident.notificationIds)
  let found = (await notificationsInGroups(db, incident.tenantId, groups, incident.openedAt - LOOKBACK_US, toUs)).filter((n) => !linked.has(n.id))
  if (!found.length) return incident.notificationIds
  // Only news costs the look for an earlier incident of the cause, whose notifications are its own.
  const before = await lastResolvedAt(db, incident.tenantId, incident.causeKey, incident.openedAt)
  if (before !== null) found = found.filter((n) => n.createdAt > before)
  return [...incident.notificationIds, ...found.map((n) => n.id)]
}
