import type { DbOrTx, Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import type { AppEvents } from '../../events'
import { formatTimestamp } from '../../platform/time'
import { addXidCount, insertServerEvent, insertServerEvents, type ServerEventRow } from './fleet.repository'

export type Severity = ServerEventRow['severity']

/**
 * Typed durable server events. Kinds written by the service: presence.online, presence.suspect,
 * presence.offline, agent.enrolled, agent.hello, maintenance.declared, maintenance.ended,
 * server.decommissioned, server.updated, marketplace.rental_started, marketplace.rental_ended, readiness.regressed,
 * readiness.recovered (docs/readiness.md), and the watchdog's watchdog.notified / action / held / gave_up / recovered
 * (docs/watchdog.md), the drain's drain.<state> (docs/marketplaces.md "Drain"); the agent's own reports keep their kind under agent.<kind>.
 */
export async function recordServerEvent(
  tx: DbOrTx,
  deps: Pick<Deps, 'newId' | 'clock' | 'events'>,
  server: { id: string; tenantId: string },
  /** `at` and `id`: when it happened and its id, for an event written later than it happened (presence steps). */
  event: { kind: string; severity?: Severity; message: string; data?: Record<string, unknown> | null; at?: number; id?: string },
): Promise<void> {
  const { row, announced } = eventRecord(deps, server, event)
  await insertServerEvent(tx, row)
  const xid = xidOf(event)
  if (xid) await addXidCount(tx, { serverId: server.id, ...xid, at: row.createdAt })
  // Notifications react in this transaction (src/reactions.ts).
  await deps.events.emit('server.event_recorded', { tx: tx as Tx, ...announced })
}

type Announced = AppEvents['server.events_recorded']['events'][number]

/** An event's stored row and what is announced of it (one event alone, or in a batch). */
function eventRecord(
  deps: Pick<Deps, 'newId' | 'clock'>,
  server: { id: string; tenantId: string },
  event: ServerEventInput,
): { row: ServerEventRow; announced: Announced } {
  const severity = event.severity ?? 'info'
  const id = event.id ?? deps.newId()
  const at = event.at ?? deps.clock.nowUs()
  const data = event.data ?? null
  return {
    row: { id, tenantId: server.tenantId, serverId: server.id, kind: event.kind, severity, message: event.message.slice(0, 1024), data, createdAt: at },
    announced: { server: { id: server.id, tenantId: server.tenantId }, eventId: id, at, kind: event.kind, severity, message: event.message, data },
  }
}

export type ServerEventInput = Parameters<typeof recordServerEvent>[3]

/**
 * Several server events in one go (a presence flush's transitions): written with a few multi-row
 * statements and announced as one `server.events_recorded`, whose reactions do for each event
 * exactly what they do for one recorded alone, with their reads and writes per batch. Each server
 * appears at most once in `list` (the caller starts a new batch for a server's next event).
 */
export async function recordServerEvents(
  tx: DbOrTx,
  deps: Pick<Deps, 'newId' | 'clock' | 'events'>,
  list: { server: { id: string; tenantId: string }; event: ServerEventInput }[],
): Promise<void> {
  if (list.length === 0) return
  const rows: ServerEventRow[] = []
  const events: Announced[] = []
  for (const { server, event } of list) {
    const { row, announced } = eventRecord(deps, server, event)
    rows.push(row)
    events.push(announced)
  }
  await insertServerEvents(tx, rows)
  for (const e of events) {
    const xid = xidOf(e)
    if (xid) await addXidCount(tx, { serverId: e.server.id, ...xid, at: e.at })
  }
  await deps.events.emit('server.events_recorded', { tx: tx as Tx, events })
}

/**
 * An agent's `gpu.xid` event counts towards its server's Xid counters (gpuhq_gpu_xid_errors_total)
 * when its data carries the Xid number (an integer 0..65535); a `gpu_index` outside 0..127 or
 * absent counts as "GPU not known" (-1).
 */
function xidOf(event: { kind: string; data?: Record<string, unknown> | null }): { xid: number; gpuIndex: number } | null {
  if (event.kind !== 'agent.gpu.xid') return null
  const xid = event.data?.xid
  if (typeof xid !== 'number' || !Number.isInteger(xid) || xid < 0 || xid > 65_535) return null
  const gpu = event.data?.gpu_index
  return { xid, gpuIndex: typeof gpu === 'number' && Number.isInteger(gpu) && gpu >= 0 && gpu <= 127 ? gpu : -1 }
}

export function eventView(e: ServerEventRow) {
  return {
    id: e.id,
    server_id: e.serverId,
    kind: e.kind,
    severity: e.severity,
    message: e.message,
    data: e.data,
    created_at: formatTimestamp(e.createdAt),
  }
}
