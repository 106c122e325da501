import type { DbOrTx } from '../../../db/client'
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
  deps: Pick<Deps, 'newId' | 'clock'>,
  server: { id: string; tenantId: string },
  event: { kind: string; severity?: Severity; message: string; data?: Record<string, unknown> | null },
): void {
  insertServerEvent(tx, {
    id: deps.newId(),
    tenantId: server.tenantId,
    serverId: server.id,
    kind: event.kind,
    severity: event.severity ?? 'info',
    message: event.message.slice(0, 1024),
    data: event.data ?? null,
    createdAt: deps.clock.nowUs(),
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
