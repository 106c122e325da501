import type { DbOrTx, Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { formatTimestamp } from '../../platform/time'
import { insertServerEvent, type ServerEventRow } from './fleet.repository'

export type Severity = ServerEventRow['severity']

/**
 * Typed durable server events. Kinds written by the service: presence.online, presence.suspect,
 * presence.offline, agent.enrolled, agent.hello, maintenance.declared, maintenance.ended,
 * server.decommissioned, server.updated, marketplace.rental_started, marketplace.rental_ended; the agent's own reports keep their kind under agent.<kind>.
 */
export function recordServerEvent(
  tx: DbOrTx,
  deps: Pick<Deps, 'newId' | 'clock' | 'events'>,
  server: { id: string; tenantId: string },
  /** `at` and `id`: when it happened and its id, for an event written later than it happened (presence steps). */
  event: { kind: string; severity?: Severity; message: string; data?: Record<string, unknown> | null; at?: number; id?: string },
): void {
  const severity = event.severity ?? 'info'
  const id = event.id ?? deps.newId()
  const at = event.at ?? deps.clock.nowUs()
  insertServerEvent(tx, {
    id,
    tenantId: server.tenantId,
    serverId: server.id,
    kind: event.kind,
    severity,
    message: event.message.slice(0, 1024),
    data: event.data ?? null,
    createdAt: at,
  })
  // Notifications react in this transaction (src/reactions.ts).
  deps.events.emit('server.event_recorded', {
    tx: tx as Tx,
    server: { id: server.id, tenantId: server.tenantId },
    eventId: id,
    at,
    kind: event.kind,
    severity,
    message: event.message,
    data: event.data ?? null,
  })
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
