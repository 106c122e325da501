import type { AppEvents } from '../../events'
import { dropSignals, hasEnabledRule, putSignal } from './watchdog.repository'

const WATCHED = new Set(['agent.gpu.xid', 'agent.gpu.fallen_off_bus', 'agent.gpu.missing', 'agent.gpu.returned', 'presence.online'])

const gpuIndexOf = (data: Record<string, unknown> | null): number | null => {
  const g = data?.gpu_index
  return typeof g === 'number' && Number.isInteger(g) && g >= 0 && g <= 127 ? g : null
}

/**
 * What the watchdog keeps of a server's events as they arrive, in the transaction that recorded
 * them (docs/watchdog.md "Conditions"): the latest time of each Xid (a GPU fallen off the bus
 * without an Xid number counts as Xid 79), and the GPUs the agent reports missing until they
 * return or the server comes online again (its new hello tells the GPUs it has). Only for tenants
 * with a rule turned on; the `watchdog.evaluate` job decides.
 */
export async function watchdogOnServerEvent(e: AppEvents['server.event_recorded']): Promise<void> {
  if (!WATCHED.has(e.kind) || !(await hasEnabledRule(e.tx, e.server.tenantId))) return
  const base = { serverId: e.server.id, tenantId: e.server.tenantId, value: null, at: e.at }
  if (e.kind === 'agent.gpu.xid') {
    const xid = e.data?.xid
    if (typeof xid === 'number' && Number.isInteger(xid) && xid >= 0 && xid <= 65_535) await putSignal(e.tx, { ...base, kind: 'xid', key: String(xid) })
  } else if (e.kind === 'agent.gpu.fallen_off_bus') await putSignal(e.tx, { ...base, kind: 'xid', key: '79' })
  else if (e.kind === 'agent.gpu.missing') {
    const g = gpuIndexOf(e.data)
    if (g !== null) await putSignal(e.tx, { ...base, kind: 'gpu_missing', key: String(g) })
  } else if (e.kind === 'agent.gpu.returned') {
    const g = gpuIndexOf(e.data)
    if (g !== null) await dropSignals(e.tx, e.server.id, 'gpu_missing', [String(g)])
  } else await dropSignals(e.tx, e.server.id, 'gpu_missing')
}

/**
 * A batch of server events (a presence flush's transitions): what watchdogOnServerEvent does for
 * each, whether the tenant has a rule turned on read once per tenant of the batch.
 */
export async function watchdogOnServerEvents(e: AppEvents['server.events_recorded']): Promise<void> {
  const enabled = new Map<string, boolean>()
  for (const x of e.events) {
    if (!WATCHED.has(x.kind)) continue
    let on = enabled.get(x.server.tenantId)
    if (on === undefined) enabled.set(x.server.tenantId, (on = await hasEnabledRule(e.tx, x.server.tenantId)))
    if (on) await watchdogOnServerEvent({ ...x, tx: e.tx })
  }
}
