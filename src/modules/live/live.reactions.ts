import type { DbOrTx } from '../../../db/client'
import type { AppEvents } from '../../events'
import type { Deps } from '../../platform/context'
import { formatMoney } from '../../platform/money'
import { formatTimestamp } from '../../platform/time'
import { liveHub } from './live.hub'
import { insertLiveEvent, insertLiveEvents } from './live.repository'

/**
 * The live stream's producers, wired in src/reactions.ts: each turns a change another module made
 * into a row of the buffer, in that change's transaction (it commits or rolls back with it), and
 * wakes this process's open streams of the tenant once the transaction is over.
 */

/** What a live row is made of: its payload is `{ type, at, ...data }`, `at` the change's time or now. */
type Entry = { tenantId: string; serverId: string | null; type: string; at?: number; data: Record<string, unknown> }

async function record(tx: DbOrTx, deps: Deps, e: Entry): Promise<void> {
  const now = deps.clock.nowUs()
  const payload = JSON.stringify({ type: e.type, at: formatTimestamp(e.at ?? now), ...e.data })
  await insertLiveEvent(tx, { tenantId: e.tenantId, serverId: e.serverId, type: e.type, payload, createdAt: now })
  liveHub(deps).wakeSoon(e.tenantId)
}

/** What `record` writes for each entry, in order, per tenant in a few multi-row statements. */
async function recordMany(tx: DbOrTx, deps: Deps, entries: Iterable<Entry>): Promise<void> {
  const now = deps.clock.nowUs()
  const byTenant = new Map<string, Parameters<typeof insertLiveEvents>[2]>()
  for (const e of entries) {
    const payload = JSON.stringify({ type: e.type, at: formatTimestamp(e.at ?? now), ...e.data })
    const row = { serverId: e.serverId, type: e.type, payload, createdAt: now }
    const rows = byTenant.get(e.tenantId)
    if (rows) rows.push(row)
    else byTenant.set(e.tenantId, [row])
  }
  for (const [tenantId, rows] of byTenant) {
    await insertLiveEvents(tx, tenantId, rows)
    liveHub(deps).wakeSoon(tenantId)
  }
}

/** A presence transition's live row, from the server event fleet records for it; null for any other event. */
function presenceEntry(x: Omit<AppEvents['server.event_recorded'], 'tx'>): Entry | null {
  if (!x.kind.startsWith('presence.')) return null
  const to = x.kind.slice('presence.'.length)
  const from = typeof x.data?.from === 'string' ? x.data.from : null
  return {
    tenantId: x.server.tenantId,
    serverId: x.server.id,
    type: x.kind,
    at: x.at,
    data: { server_id: x.server.id, from, to, message: x.message, server_event_id: x.eventId },
  }
}

/** Presence transitions, from the server events fleet records for them. */
export async function liveFromServerEvent(deps: Deps, e: AppEvents['server.event_recorded']): Promise<void> {
  const entry = presenceEntry(e)
  if (entry) await record(e.tx, deps, entry)
}

/**
 * Presence transitions recorded together (a presence flush): the rows liveFromServerEvent writes for
 * each, in order, per tenant in a few multi-row statements.
 */
export async function liveFromServerEvents(deps: Deps, e: AppEvents['server.events_recorded']): Promise<void> {
  await recordMany(
    e.tx,
    deps,
    e.events.map(presenceEntry).filter((x) => x !== null),
  )
}

export async function liveFromRental(deps: Deps, e: AppEvents['server.rental_changed']): Promise<void> {
  await record(e.tx, deps, {
    tenantId: e.server.tenantId,
    serverId: e.server.id,
    type: e.started ? 'rental.started' : 'rental.ended',
    data: { server_id: e.server.id, source: e.source, rental_running: e.running },
  })
}

export async function liveFromCommand(deps: Deps, e: AppEvents['command.changed']): Promise<void> {
  const c = e.command
  await record(e.tx, deps, {
    tenantId: c.tenantId,
    serverId: c.serverId,
    type: `command.${e.to}`,
    data: {
      command_id: c.id,
      server_id: c.serverId,
      command_type: c.type,
      axis: e.axis,
      from: e.from,
      to: e.to,
      delivery_status: c.deliveryStatus,
      execution_status: c.executionStatus,
      queue_reason: c.queueReason,
      note: e.note,
    },
  })
}

/** An alert incident's change as its live row. */
function alertEntry(e: Omit<AppEvents['alert.changed'], 'tx'>): Entry {
  const i = e.incident
  return {
    tenantId: i.tenantId,
    serverId: i.serverId,
    type: `alert.${e.change}`,
    data: {
      alert_id: i.id,
      kind: i.kind,
      severity: i.severity,
      server_id: i.serverId,
      marketplace: i.marketplace,
      title: i.title,
      by: e.by,
      resolution: e.resolution,
    },
  }
}

export async function liveFromAlert(deps: Deps, e: AppEvents['alert.changed']): Promise<void> {
  await record(e.tx, deps, alertEntry(e))
}

/** Alert incidents changed together: the rows liveFromAlert writes for each, in order, per tenant in a few multi-row statements. */
export async function liveFromAlerts(deps: Deps, e: AppEvents['alerts.changed']): Promise<void> {
  await recordMany(e.tx, deps, e.changes.map(alertEntry))
}

export async function liveFromTopup(deps: Deps, e: AppEvents['topup.succeeded']): Promise<void> {
  const t = e.topup
  await record(e.tx, deps, {
    tenantId: t.tenantId,
    serverId: null,
    type: 'topup.succeeded',
    data: {
      topup_id: t.id,
      status: 'succeeded',
      amount_usd: formatMoney(t.amountMicros),
      credited_usd: formatMoney(t.creditedMicros),
      payment_method: t.paymentMethod,
    },
  })
}

export async function liveFromTopupNotCredited(deps: Deps, e: AppEvents['topup.not_credited']): Promise<void> {
  const t = e.topup
  await record(e.tx, deps, {
    tenantId: t.tenantId,
    serverId: null,
    type: `topup.${e.status}`,
    data: { topup_id: t.id, status: e.status, amount_usd: formatMoney(t.amountMicros), credited_usd: null, payment_method: t.paymentMethod },
  })
}
