import type { Server, ServerWebSocket, WebSocketHandler } from 'bun'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { withTransaction } from '../../../db/client'
import { perDeps, type Deps } from '../../platform/context'
import { problemResponse } from '../../platform/http'
import { ProblemError } from '../../platform/problem'
import { stripUnsafeText } from '../../platform/text'
import { parseTimestamp } from '../../platform/time'
import { recordServerEvent } from '../fleet/events'
import { findServer, markFleetDirty, updateServer } from '../fleet/fleet.repository'
import { fleetRuntime, type Sample } from '../fleet/presence'
import { MAX_METRIC_NAMES_PER_SERVER, metricNames } from '../telemetry/ingest'
import { Frames } from './agent.model'
import { compareVersions, HEARTBEAT_INTERVAL_S, hostFacts, resolveAgent, TELEMETRY_INTERVAL_S } from './agent.service'
import { applyCommandFrame, dispatchServer, sessionLost, sessionReady } from '../commands/commands.delivery'

/**
 * The agent's WebSocket session (agent-protocol.md "Session"), on Bun's native WebSockets. The
 * credential is checked before the upgrade; one live session per server (a newer one closes the
 * older with 4409); every frame is validated, and a bad one gets an `error` frame and is dropped —
 * it never closes the session, touches other sessions or changes stored data.
 */
export const AGENT_WS_PATH = '/api/v1/agent/ws'
export const MAX_FRAME_BYTES = 256 * 1024
/**
 * The most Bun buffers of one message. Bun closes the session (1009) on a larger one without
 * handing it to us, so no `error` frame can answer it; the slack over the protocol's limit keeps
 * the protocol's answer (frame_too_large, session open) for a frame just over it, while a 16 MiB
 * frame is refused from its header instead of being buffered.
 */
export const MAX_PAYLOAD_BYTES = MAX_FRAME_BYTES + 64 * 1024
/**
 * Frames per session: a token bucket of FRAME_BURST refilled at FRAMES_PER_SECOND. The burst
 * covers the reference agent's outbox (up to 1000 command frames and events) flushed after
 * `welcome`; the rate is a hundred times a normal session's. Each refused frame is a strike, and
 * strikes fade at one a second: past STRIKES_BEFORE_CLOSE the session is closed with 4429.
 */
export const FRAME_BURST = 1200
export const FRAMES_PER_SECOND = 20
export const STRIKES_BEFORE_CLOSE = 100
/** How far ahead of the service's clock a sample's time may be (agent clock drift). */
export const MAX_CLOCK_AHEAD_US = 10 * 60 * 1_000_000

export type AgentSocketData = {
  serverId: string
  tenantId: string
  online: boolean
  requestId: string
  /** Frame token bucket and strikes, on the service clock. */
  limit: { tokens: number; at: number; strikes: number; struckAt: number }
}
type Socket = ServerWebSocket<AgentSocketData>

const check = {
  hello: TypeCompiler.Compile(Frames.hello),
  heartbeat: TypeCompiler.Compile(Frames.heartbeat),
  telemetry: TypeCompiler.Compile(Frames.telemetry),
  event: TypeCompiler.Compile(Frames.event),
}

/** Live sessions of this process, by server. */
export class AgentSessions {
  readonly sockets = new Map<string, Socket>()
  /**
   * Closes the live session of a server (credential replaced, decommissioned). The entry stays
   * until the socket's close handler runs, so that handler still sees it as the live session and
   * takes the server offline at once.
   */
  close(serverId: string, code: number, reason: string): void {
    const ws = this.sockets.get(serverId)
    if (!ws) return
    ws.close(code, reason)
  }
  send(serverId: string, frame: Record<string, unknown>): boolean {
    const ws = this.sockets.get(serverId)
    if (!ws) return false
    ws.send(JSON.stringify(frame))
    return true
  }
}

export const agentSessions = perDeps(() => new AgentSessions())

/** Authenticates the upgrade request; answers 401 (a problem document) before any upgrade. */
export function upgradeAgent(deps: Deps, request: Request, srv: Server<AgentSocketData>, requestId: string): Response | undefined {
  const m = /^Bearer ([\x21-\x7e]{1,512})$/i.exec(request.headers.get('authorization')?.trim() ?? '')
  const actor = m ? resolveAgent(deps, m[1]!) : null
  if (!actor)
    return problemResponse(
      new ProblemError('unauthorized', { detail: 'missing or invalid agent credential', headers: { 'WWW-Authenticate': 'Bearer realm="gpuhq"' } }),
      deps.config.publicUrl,
      requestId,
      AGENT_WS_PATH,
    )
  const now = deps.clock.nowUs()
  const limit = { tokens: FRAME_BURST, at: now, strikes: 0, struckAt: now }
  const ok = srv.upgrade(request, {
    data: { serverId: actor.tokenId!, tenantId: actor.tenantId, online: false, requestId, limit },
    headers: { 'x-request-id': requestId },
  })
  if (!ok)
    return problemResponse(
      new ProblemError('validation_failed', { status: 426, detail: 'a WebSocket upgrade is required', errors: [{ path: '/upgrade', code: 'required' }] }),
      deps.config.publicUrl,
      requestId,
      AGENT_WS_PATH,
    )
  return undefined
}

function sendError(ws: Socket, code: string, message: string): void {
  ws.send(JSON.stringify({ type: 'error', code, message }))
}

/** Takes one frame from the session's bucket; false when it is empty. */
function takeFrame(limit: AgentSocketData['limit'], now: number): boolean {
  limit.tokens = Math.min(FRAME_BURST, limit.tokens + (Math.max(0, now - limit.at) / 1_000_000) * FRAMES_PER_SECOND)
  limit.at = now
  if (limit.tokens < 1) return false
  limit.tokens -= 1
  return true
}

/** Records a refused frame; answers the strikes left after fading at one a second. */
function strike(limit: AgentSocketData['limit'], now: number): number {
  limit.strikes = Math.max(0, limit.strikes - Math.max(0, now - limit.struckAt) / 1_000_000) + 1
  limit.struckAt = now
  return limit.strikes
}

export function agentWebSocket(deps: Deps): WebSocketHandler<AgentSocketData> {
  const sessions = agentSessions(deps)
  const runtime = fleetRuntime(deps)
  const names = metricNames(deps)
  const handlers: Record<string, (ws: Socket, frame: any) => void> = {
    hello(ws, f) {
      if (compareVersions(f.agent_version, deps.config.minAgentVersion) < 0) {
        sendError(ws, 'unsupported_agent_version', `agent ${f.agent_version} is older than the minimum ${deps.config.minAgentVersion}`)
        ws.close(4426, 'unsupported agent version')
        return
      }
      withTransaction(deps.db, (tx) => {
        updateServer(tx, ws.data.serverId, hostFacts(f))
        markFleetDirty(tx, ws.data.tenantId)
      })
      ws.send(
        JSON.stringify({
          type: 'welcome',
          server_id: ws.data.serverId,
          heartbeat_interval_s: HEARTBEAT_INTERVAL_S,
          telemetry_interval_s: TELEMETRY_INTERVAL_S,
        }),
      )
      sessionReady(deps, ws.data.serverId)
    },
    heartbeat(ws) {
      const cameOnline = runtime.heartbeat(ws.data.serverId, ws.data.online)
      if (cameOnline || !ws.data.online) ws.data.online = true
    },
    telemetry(ws, f) {
      const samples: Sample[] = []
      for (const [i, s] of (f.samples as { t: string; scope: string; gpu_index?: number | null; values: Record<string, number | null> }[]).entries()) {
        const t = parseTimestamp(s.t)
        if (t === null) return sendError(ws, 'validation_failed', `samples/${i}/t is not an RFC 3339 timestamp`)
        // A sample from the future (a wrong agent clock) would stay "latest" for ever.
        if (t > deps.clock.nowUs() + MAX_CLOCK_AHEAD_US)
          return sendError(ws, 'validation_failed', `samples/${i}/t is more than 10 minutes ahead of the service's clock`)
        if (s.scope === 'gpu' && (s.gpu_index === undefined || s.gpu_index === null))
          return sendError(ws, 'validation_failed', `samples/${i} has scope gpu but no gpu_index`)
        samples.push({ t, gpuIndex: s.scope === 'gpu' ? s.gpu_index! : -1, values: s.values })
      }
      const over = names.admit(
        ws.data.serverId,
        samples.flatMap((s) => Object.keys(s.values)),
      )
      if (over.length > 0)
        return sendError(
          ws,
          'metric_limit_reached',
          `a server reports at most ${MAX_METRIC_NAMES_PER_SERVER} metric names; new ones (${over.slice(0, 5).join(', ')}) would pass that, so the frame was dropped`.slice(
            0,
            512,
          ),
        )
      runtime.telemetry(ws.data.serverId, samples)
    },
    event(ws, f) {
      const rental = f.kind === 'rental.started' ? true : f.kind === 'rental.ended' ? false : null
      withTransaction(deps.db, (tx) => {
        recordServerEvent(
          tx,
          deps,
          { id: ws.data.serverId, tenantId: ws.data.tenantId },
          { kind: `agent.${f.kind}`, severity: f.severity, message: stripUnsafeText(f.message), data: f.data ?? null },
        )
        // Until marketplace sync owns the rental facts, the agent may report them.
        if (rental !== null) updateServer(tx, ws.data.serverId, { rentalActive: rental, rentalSource: 'agent', rentalUpdatedAt: deps.clock.nowUs() })
      })
      if (rental === false) dispatchServer(deps, ws.data.serverId)
    },
  }
  return {
    maxPayloadLength: MAX_PAYLOAD_BYTES,
    // Seconds without a byte from the agent (4 heartbeats at the default 15 s): Bun then pings, and
    // closes a session that does not answer within as long again — a dead peer, not a quiet one.
    idleTimeout: deps.config.agentIdleTimeoutSeconds,
    sendPings: true,
    open(ws) {
      const old = sessions.sockets.get(ws.data.serverId)
      sessions.sockets.set(ws.data.serverId, ws)
      if (old && old !== ws) old.close(4409, 'replaced by a newer session')
      // Whatever the database says, this session has not sent a heartbeat yet.
      const server = findServer(deps.db, ws.data.tenantId, ws.data.serverId)
      ws.data.online = false
      if (!server) ws.close(4404, 'server not found')
    },
    message(ws, raw) {
      const now = deps.clock.nowUs()
      if (!takeFrame(ws.data.limit, now)) {
        sendError(ws, 'rate_limited', `more than ${FRAMES_PER_SECOND} frames a second (bursts of ${FRAME_BURST}); the frame was dropped`)
        if (strike(ws.data.limit, now) > STRIKES_BEFORE_CLOSE) ws.close(4429, 'frame rate exceeded')
        return
      }
      const size = typeof raw === 'string' ? Buffer.byteLength(raw) : raw.byteLength
      if (size > MAX_FRAME_BYTES) return sendError(ws, 'frame_too_large', `frames are limited to ${MAX_FRAME_BYTES} bytes`)
      let frame: any
      try {
        frame = JSON.parse(typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8'))
      } catch {
        return sendError(ws, 'invalid_json', 'a frame must be one JSON object')
      }
      if (typeof frame !== 'object' || frame === null || Array.isArray(frame) || typeof frame.type !== 'string')
        return sendError(ws, 'validation_failed', 'a frame must be a JSON object with a string type')
      const type = frame.type as string
      const validator = check[type as keyof typeof check]
      if (!validator) {
        if (type.startsWith('command.')) return handleCommandFrame(deps, ws, frame)
        return sendError(ws, 'unknown_type', `unknown frame type ${type.slice(0, 64)}`)
      }
      if (!validator.Check(frame)) {
        const first = validator.Errors(frame).First()
        return sendError(ws, 'validation_failed', `${type}${first?.path ?? ''}: ${first?.message ?? 'invalid'}`.slice(0, 512))
      }
      try {
        handlers[type]!(ws, frame)
      } catch (e) {
        deps.log.error('agent frame failed', { server_id: ws.data.serverId, type, error: e })
        sendError(ws, 'internal_error', 'the service could not process this frame; it was dropped')
      }
    },
    close(ws, code, reason) {
      if (sessions.sockets.get(ws.data.serverId) !== ws) return
      sessions.sockets.delete(ws.data.serverId)
      names.forget(ws.data.serverId)
      try {
        runtime.sessionClosed(ws.data.serverId, `session closed (${code}${reason ? ` ${reason}` : ''})`)
        sessionLost(deps, ws.data.serverId)
      } catch (e) {
        deps.log.error('agent session close failed', { server_id: ws.data.serverId, error: e })
      }
    },
  }
}

function handleCommandFrame(deps: Deps, ws: Socket, frame: any): void {
  const outcome = applyCommandFrame(deps, ws.data.serverId, frame)
  if (!outcome.ok) sendError(ws, outcome.code, outcome.message)
}
