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

async function record(
  tx: DbOrTx,
  deps: Deps,
  e: { tenantId: string; serverId: string | null; type: string; at?: number; data: Record<string, unknown> },
): Promise<void> {
  const now = deps.clock.nowUs()
  const payload = JSON.stringify({ type: e.type, at: formatTimestamp(e.at ?? now), ...e.data })
  await insertLiveEvent(tx, { tenantId: e.tenantId, serverId: e.serverId, type: e.type, payload, createdAt: now })
  liveHub(deps).wakeSoon(e.tenantId)
}

/** Presence transitions, from the server events fleet records for them. */
export async function liveFromServerEvent(deps: Deps, e: AppEvents['server.event_recorded']): Promise<void> {
  if (!e.kind.startsWith('presence.')) return
  const to = e.kind.slice('presence.'.length)
  const from = typeof e.data?.from === 'string' ? e.data.from : null
  await record(e.tx, deps, {
    tenantId: e.server.tenantId,
    serverId: e.server.id,
    type: e.kind,
    at: e.at,
    data: { server_id: e.server.id, from, to, message: e.message, server_event_id: e.eventId },
  })
}

/**
 * Presence transitions recorded together (a presence flush): the rows liveFromServerEvent writes for
 * each, in order, per tenant in a few multi-row statements.
 */
export async function liveFromServerEvents(deps: Deps, e: AppEvents['server.events_recorded']): Promise<void> {
  const now = deps.clock.nowUs()
  const byTenant = new Map<string, Parameters<typeof insertLiveEvents>[2]>()
  for (const x of e.events) {
    if (!x.kind.startsWith('presence.')) continue
    const to = x.kind.slice('presence.'.length)
    const from = typeof x.data?.from === 'string' ? x.data.from : null
    const payload = JSON.stringify({
      type: x.kind,
      at: formatTimestamp(x.at),
      server_id: x.server.id,
      from,
      to,
      message: x.message,
      server_event_id: x.eventId,
    })
    const row = { serverId: x.server.id, type: x.kind, payload, createdAt: now }
    const rows = byTenant.get(x.server.tenantId)
    if (rows) rows.push(row)
    else byTenant.set(x.server.tenantId, [row])
  }
  for (const [tenantId, rows] of byTenant) {
    await insertLiveEvents(e.tx, tenantId, rows)
    liveHub(deps).wakeSoon(tenantId)
  }
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

/** An alert incident's change as a live row's type and data. */
function alertRow(e: Omit<AppEvents['alert.changed'], 'tx'>) {
  const i = e.incident
  return {
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
  await record(e.tx, deps, { tenantId: e.incident.tenantId, serverId: e.incident.serverId, ...alertRow(e) })
}

/** Alert incidents changed together: the rows liveFromAlert writes for each, in order, per tenant in a few multi-row statements. */
export async function liveFromAlerts(deps: Deps, e: AppEvents['alerts.changed']): Promise<void> {
  const now = deps.clock.nowUs()
  const at = formatTimestamp(now)
  const byTenant = new Map<string, Parameters<typeof insertLiveEvents>[2]>()
  for (const c of e.changes) {
    const { type, data } = alertRow(c)
    const row = { serverId: c.incident.serverId, type, payload: JSON.stringify({ type, at, ...data }), createdAt: now }
    const rows = byTenant.get(c.incident.tenantId)
    if (rows) rows.push(row)
    else byTenant.set(c.incident.tenantId, [row])
  }
  for (const [tenantId, rows] of byTenant) {
    await insertLiveEvents(e.tx, tenantId, rows)
    liveHub(deps).wakeSoon(tenantId)
  }
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
