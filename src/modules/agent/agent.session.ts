import type { AgentFrame } from '#protocol'
import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { stripUnsafeText } from '../../platform/text'
import { parseTimestamp } from '../../platform/time'
import { applyCommandFrame, offerAgentUpdate, sessionLost, sessionReady } from '../commands'
import { agentOfTokenHash, agentSessions, fleetRuntime, recordRentalSighting, recordServerEvent, serverOfTenant, type LiveSession, type Sample } from '../fleet'
import { inMetricRange, MAX_METRIC_NAMES_PER_SERVER, metricNames, metricRange } from '../telemetry'
import { servedAgentVersion } from './agent.files'
import type { OutgoingFrame } from './agent.model'
import { compareVersions, HEARTBEAT_INTERVAL_S, hostFacts, TELEMETRY_INTERVAL_S } from './agent.service'

/**
 * What the agent's WebSocket session does with each valid frame (docs/fleet.md "The session");
 * agent.ws.ts is the transport around it. A verb answers a Refusal when the frame is
 * dropped: the session sends it as an `error` frame and stays open.
 */
export type AgentSocketData = {
  serverId: string
  tenantId: string
  online: boolean
  requestId: string
  /** The hash of the credential the upgrade was let through with: the session's open checks it again (openSession). */
  tokenHash: string
  /** The server's frame token bucket and strikes, on the service clock: shared by its sessions (agent.ws.ts). */
  limit: { tokens: number; at: number; strikes: number; struckAt: number }
  /**
   * The session's open, frames and close, handled one after the other in arrival order
   * (agent.ws.ts): each awaits the database, and a frame must never be handled before the one
   * before it (a hello before the session is open, a report before its command's acceptance).
   */
  turn?: Promise<void>
}
export type Refusal = { code: string; message: string }

/** How far ahead of the service's clock a sample's time may be (agent clock drift). */
const MAX_CLOCK_AHEAD_US = 10 * 60 * 1_000_000

/** Why a session must close at once: its close code and reason. */
export type SessionRefusal = { code: number; reason: string }

/**
 * The session becomes the server's live one (an older one is closed); answers why it must close
 * instead (the server is gone, or its credential stopped working), or null. The credential was
 * checked before the upgrade, with a database read between that check and this open: a
 * re-enrolment (4401) or a decommissioning (4410) that committed meanwhile closed the live session
 * it found, not this one, so the credential is checked again here, before this session replaces
 * any (a session on a stale credential never closes the new agent's with 4409).
 */
export async function openSession(deps: Deps, s: AgentSocketData, session: LiveSession): Promise<SessionRefusal | null> {
  if ((await agentOfTokenHash(deps.db, s.tokenHash))?.id !== s.serverId) {
    const server = await serverOfTenant(deps.db, s.tenantId, s.serverId)
    if (!server) return { code: 4404, reason: 'server not found' }
    if (server.decommissionedAt !== null) return { code: 4410, reason: 'server decommissioned' }
    return { code: 4401, reason: 'agent credential replaced' }
  }
  // Registered as soon as the read answers: a revocation that commits after it closes this session itself.
  agentSessions(deps).open(s.serverId, session)?.close(4409, 'replaced by a newer session')
  // Whatever the database says, this session has not sent a heartbeat yet.
  s.online = false
  return null
}

/**
 * hello → welcome, then what an earlier session left unaccepted and the queue go out. An agent
 * older than the minimum is refused; the caller then closes the session (4426).
 */
export async function sessionHello(
  deps: Deps,
  s: AgentSocketData,
  f: AgentFrame<'hello'>,
  reply: (frame: OutgoingFrame) => void,
): Promise<Refusal | undefined> {
  if (compareVersions(f.agent_version, deps.config.minAgentVersion) < 0)
    return { code: 'unsupported_agent_version', message: `agent ${f.agent_version} is older than the minimum ${deps.config.minAgentVersion}` }
  // Group-committed with the session's other presence steps; written before any read sees the server.
  fleetRuntime(deps).hello(s.serverId, s.tenantId, hostFacts(f))
  reply({ type: 'welcome', server_id: s.serverId, heartbeat_interval_s: HEARTBEAT_INTERVAL_S, telemetry_interval_s: TELEMETRY_INTERVAL_S })
  await sessionReady(deps, s.serverId)
  await offerUpdate(deps, s, f.agent_version)
}

/**
 * An agent older than the executable this service serves is offered it (docs/agent.md
 * "Self-update"): one `agent.update` command that waits for the end of a rental, and a server event
 * `agent.update.offered` saying so. An agent run from source (no executable built) is offered nothing.
 */
async function offerUpdate(deps: Deps, s: AgentSocketData, running: string): Promise<void> {
  const wanted = servedAgentVersion(deps.config.agentBinDir)
  if (!wanted || compareVersions(running, wanted) >= 0) return
  const server = { id: s.serverId, tenantId: s.tenantId }
  let commandId: string | null
  try {
    commandId = await offerAgentUpdate(deps, server, wanted)
  } catch (e) {
    // A full queue or a decommissioned server: the session goes on, the offer comes at a later hello.
    deps.log.warn('agent update not offered', { server_id: s.serverId, version: wanted, error: e })
    return
  }
  if (!commandId) return
  await withTransaction(deps.db, (tx) =>
    recordServerEvent(tx, deps, server, {
      kind: 'agent.update.offered',
      severity: 'info',
      message: `agent ${wanted} offered to this server (running ${running}); it installs when no rental runs`,
      data: { from_version: running, to_version: wanted, command_id: commandId },
    }),
  )
}

export function sessionHeartbeat(deps: Deps, s: AgentSocketData): void {
  fleetRuntime(deps).heartbeat(s.serverId, s.online)
  s.online = true
}

export async function sessionTelemetry(deps: Deps, s: AgentSocketData, f: AgentFrame<'telemetry'>): Promise<Refusal | undefined> {
  const invalid = (message: string) => ({ code: 'validation_failed', message })
  const samples: Sample[] = []
  // Values outside their metric's physical range (docs/telemetry.md "Bounds of reported values").
  const outOfRange: string[] = []
  for (const [i, x] of f.samples.entries()) {
    const t = parseTimestamp(x.t)
    if (t === null) return invalid(`samples/${i}/t is not an RFC 3339 timestamp`)
    // A sample from the future (a wrong agent clock) would stay "latest" for ever.
    if (t > deps.clock.nowUs() + MAX_CLOCK_AHEAD_US) return invalid(`samples/${i}/t is more than 10 minutes ahead of the service's clock`)
    if (x.scope === 'gpu' && (x.gpu_index === undefined || x.gpu_index === null)) return invalid(`samples/${i} has scope gpu but no gpu_index`)
    let values = x.values
    for (const metric in x.values)
      if (!inMetricRange(metric, x.scope, x.values[metric] as number | null)) {
        if (values === x.values) values = { ...x.values }
        delete values[metric]
        const { min, max } = metricRange(metric, x.scope)
        outOfRange.push(`samples/${i}/values/${metric} (${x.scope} range ${min}..${max})`)
      }
    if (values !== x.values && Object.keys(values).length === 0) continue
    samples.push({ t, gpuIndex: x.scope === 'gpu' ? x.gpu_index! : -1, values })
  }
  const over = await metricNames(deps).admit(
    s.serverId,
    samples.flatMap((x) => Object.keys(x.values)),
  )
  if (over.length > 0)
    return {
      code: 'metric_limit_reached',
      message:
        `a server reports at most ${MAX_METRIC_NAMES_PER_SERVER} metric names; new ones (${over.slice(0, 5).join(', ')}) would pass that, so the frame was dropped`.slice(
          0,
          512,
        ),
    }
  fleetRuntime(deps).telemetry(s.serverId, samples)
  // The rest of the frame is stored; only the values out of range are dropped, and the agent is told which.
  if (outOfRange.length > 0)
    return {
      code: 'value_out_of_range',
      message: `${outOfRange.length} value(s) outside their metric's range were dropped, the rest stored: ${outOfRange.slice(0, 5).join(', ')}`.slice(0, 512),
    }
}

/** An event the agent reports becomes a server event; until marketplace sync owns rentals, it may report those too. */
export async function sessionEvent(deps: Deps, s: AgentSocketData, f: AgentFrame<'event'>): Promise<void> {
  const rental = f.kind === 'rental.started' ? true : f.kind === 'rental.ended' ? false : null
  await withTransaction(deps.db, async (tx) => {
    await recordServerEvent(
      tx,
      deps,
      { id: s.serverId, tenantId: s.tenantId },
      { kind: `agent.${f.kind}`, severity: f.severity, message: stripUnsafeText(f.message), data: f.data ?? null },
    )
    if (rental !== null) await recordRentalSighting(tx, deps, s.serverId, rental)
  })
  if (rental === false) await deps.events.emit('server.rental_ended', { serverId: s.serverId })
}

/** A command.* report: the commands module applies it. */
export async function sessionCommandReport(deps: Deps, s: AgentSocketData, frame: { type: string }): Promise<Refusal | undefined> {
  const outcome = await applyCommandFrame(deps, s.serverId, frame)
  return outcome.ok ? undefined : outcome
}

/** The session closed: if it was still the live one, the server goes offline and unaccepted commands wait again. */
export async function closeSession(deps: Deps, s: AgentSocketData, session: LiveSession, reason: string): Promise<void> {
  if (!agentSessions(deps).release(s.serverId, session)) return
  metricNames(deps).forget(s.serverId)
  try {
    fleetRuntime(deps).sessionClosed(s.serverId, reason)
    await sessionLost(deps, s.serverId)
  } catch (e) {
    deps.log.error('agent session close failed', { server_id: s.serverId, error: e })
  }
}
