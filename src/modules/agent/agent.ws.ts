import type { Server, ServerWebSocket, WebSocketHandler } from 'bun'
import { checkAgentFrame, checkAnyFrame, firstFrameError, MAX_FRAME_BYTES } from '#protocol'
import { perDeps, type Deps } from '../../platform/context'
import { problemResponse } from '../../platform/http'
import { hashSecret, hasValidChecksum } from '../../platform/secrets'
import { ProblemError } from '../../platform/problem'
import { jsonTextMayHoldUnstorable, replaceUnstorable } from '../../platform/storable'
import type { OutgoingFrame } from './agent.model'
import { agentOfTokenHash } from '../fleet'
import {
  closeSession,
  openSession,
  sessionCommandReport,
  sessionEvent,
  sessionHeartbeat,
  sessionHello,
  sessionTelemetry,
  type AgentSocketData,
  type Refusal,
} from './agent.session'

export type { AgentSocketData } from './agent.session'

/**
 * The agent's WebSocket session (docs/fleet.md "The session"), on Bun's native WebSockets. The
 * credential is checked before the upgrade; one live session per server (a newer one closes the
 * older with 4409); every frame is validated, and a bad one gets an `error` frame and is dropped —
 * it never closes the session, touches other sessions or changes stored data.
 */
export const AGENT_WS_PATH = '/api/v1/agent/ws'
/**
 * The most Bun buffers of one message. Bun closes the session (1009) on a larger one without
 * handing it to us, so no `error` frame can answer it; the slack over the protocol's limit keeps
 * the protocol's answer (frame_too_large, session open) for a frame just over it, while a 16 MiB
 * frame is refused from its header instead of being buffered.
 */
const MAX_PAYLOAD_BYTES = MAX_FRAME_BYTES + 64 * 1024
/**
 * Frames per server, not per session (issue 34: twenty reconnecting sessions each got a fresh
 * burst): a token bucket of FRAME_BURST refilled at FRAMES_PER_SECOND on the service clock, kept
 * for the server across its sessions, so a reconnect carries on with what the last session left.
 * The burst covers the reference agent's outbox (up to 1000 command frames and events) flushed
 * after `welcome`; the rate is a hundred times a normal session's. Each refused frame is a strike,
 * and strikes fade at one a second: past STRIKES_BEFORE_CLOSE the session is closed with 4429, and
 * the strikes stay with the server too. Per process: with several instances behind one address, a
 * server that reconnects to each in turn has one budget per instance (docs/agent.md).
 */
export const FRAME_BURST = 1200
const FRAMES_PER_SECOND = 20
export const STRIKES_BEFORE_CLOSE = 100
type Socket = ServerWebSocket<AgentSocketData>
type FrameBudget = AgentSocketData['limit']

/** Past this many servers remembered, budgets that have refilled (the same as a new one) are forgotten. */
const BUDGETS_BEFORE_SWEEP = 10_000

class FrameBudgets {
  readonly #byServer = new Map<string, FrameBudget>()

  /** The server's budget, as its last session left it; a new one holds the full burst. */
  of(serverId: string, now: number): FrameBudget {
    let budget = this.#byServer.get(serverId)
    if (!budget) {
      if (this.#byServer.size >= BUDGETS_BEFORE_SWEEP) this.#sweep(now)
      budget = { tokens: FRAME_BURST, at: now, strikes: 0, struckAt: now }
      this.#byServer.set(serverId, budget)
    }
    return budget
  }

  #sweep(now: number): void {
    for (const [id, b] of this.#byServer) {
      const full = b.tokens + (Math.max(0, now - b.at) / 1_000_000) * FRAMES_PER_SECOND >= FRAME_BURST
      const faded = b.strikes - Math.max(0, now - b.struckAt) / 1_000_000 <= 0
      if (full && faded) this.#byServer.delete(id)
    }
  }
}

const frameBudgets = perDeps(() => new FrameBudgets())

/** Authenticates the upgrade request; answers 401 (a problem document) before any upgrade. */
export async function upgradeAgent(deps: Deps, request: Request, srv: Server<AgentSocketData>, requestId: string): Promise<Response | undefined> {
  const token = /^Bearer ([\x21-\x7e]{1,512})$/i.exec(request.headers.get('authorization')?.trim() ?? '')?.[1]
  const tokenHash = token ? hashSecret(token) : null
  // One compiled statement: the session needs the server and its tenant (a server's tenant row
  // always exists: a foreign key, and tenants are never deleted), not the actor HTTP routes get.
  const server = token && tokenHash && hasValidChecksum(token, 'gpuhq_agt_') ? await agentOfTokenHash(deps.db, tokenHash) : undefined
  if (!token || !tokenHash || !server)
    return problemResponse(
      new ProblemError('unauthorized', { detail: 'missing or invalid agent credential', headers: { 'WWW-Authenticate': 'Bearer realm="gpuhq"' } }),
      deps.config.publicUrl,
      requestId,
      AGENT_WS_PATH,
    )
  const limit = frameBudgets(deps).of(server.id, deps.clock.nowUs())
  const ok = srv.upgrade(request, {
    data: { serverId: server.id, tenantId: server.tenantId, online: false, requestId, tokenHash, limit },
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

function send(ws: Socket, frame: OutgoingFrame): void {
  ws.send(JSON.stringify(frame))
}

function sendError(ws: Socket, code: string, message: string): void {
  send(ws, { type: 'error', code, message })
}

function refuse(ws: Socket, refusal: Refusal | undefined): void {
  if (refusal) sendError(ws, refusal.code, refusal.message)
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
  /** Runs `fn` after everything the session received before it (see AgentSocketData.turn). */
  const inOrder = (ws: Socket, fn: () => Promise<unknown> | unknown): Promise<void> => {
    const next = (ws.data.turn ?? Promise.resolve()).then(fn).then(
      () => {},
      (error) => deps.log.error('agent session step failed', { server_id: ws.data.serverId, error }),
    )
    ws.data.turn = next
    return next
  }
  return {
    maxPayloadLength: MAX_PAYLOAD_BYTES,
    // Seconds without a byte from the agent (4 heartbeats at the default 15 s): Bun then pings, and
    // closes a session that does not answer within as long again — a dead peer, not a quiet one.
    idleTimeout: deps.config.agentIdleTimeoutSeconds,
    sendPings: true,
    open(ws) {
      return inOrder(ws, async () => {
        const refused = await openSession(deps, ws.data, ws)
        if (refused) ws.close(refused.code, refused.reason)
      })
    },
    message(ws, raw) {
      const now = deps.clock.nowUs()
      // The frame budget is taken on arrival; the frame is handled after those before it.
      if (!takeFrame(ws.data.limit, now)) {
        const strikes = strike(ws.data.limit, now)
        // Answered in turn, after the frames before it: a close never cuts off their answers.
        return inOrder(ws, () => {
          sendError(ws, 'rate_limited', `more than ${FRAMES_PER_SECOND} frames a second (bursts of ${FRAME_BURST}); the frame was dropped`)
          if (strikes > STRIKES_BEFORE_CLOSE) ws.close(4429, 'frame rate exceeded')
        })
      }
      return inOrder(ws, () => handleFrame(ws, raw))
    },
    close(ws, code, reason) {
      return inOrder(ws, () => closeSession(deps, ws.data, ws, `session closed (${code}${reason ? ` ${reason}` : ''})`))
    },
  }

  async function handleFrame(ws: Socket, raw: string | Buffer): Promise<void> {
    const size = typeof raw === 'string' ? Buffer.byteLength(raw) : raw.byteLength
    if (size > MAX_FRAME_BYTES) return sendError(ws, 'frame_too_large', `frames are limited to ${MAX_FRAME_BYTES} bytes`)
    let frame: unknown
    const text = typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8')
    try {
      frame = JSON.parse(text)
    } catch {
      return sendError(ws, 'invalid_json', 'a frame must be one JSON object')
    }
    // What the agent reports is kept: U+0000 and lone surrogates, which PostgreSQL cannot store, become U+FFFD.
    if (jsonTextMayHoldUnstorable(text)) replaceUnstorable(frame)
    if (!checkAnyFrame.Check(frame)) return sendError(ws, 'validation_failed', 'a frame must be a JSON object with a string type')
    const type = frame.type
    try {
      if (type.startsWith('command.')) return refuse(ws, await sessionCommandReport(deps, ws.data, frame))
      switch (type) {
        case 'hello':
          if (!checkAgentFrame.hello.Check(frame)) return invalid(ws, type, checkAgentFrame.hello.Errors(frame))
          return helloed(ws, await sessionHello(deps, ws.data, frame, (f) => send(ws, f)))
        case 'heartbeat':
          if (!checkAgentFrame.heartbeat.Check(frame)) return invalid(ws, type, checkAgentFrame.heartbeat.Errors(frame))
          return sessionHeartbeat(deps, ws.data)
        case 'telemetry':
          if (!checkAgentFrame.telemetry.Check(frame)) return invalid(ws, type, checkAgentFrame.telemetry.Errors(frame))
          return refuse(ws, await sessionTelemetry(deps, ws.data, frame))
        case 'event':
          if (!checkAgentFrame.event.Check(frame)) return invalid(ws, type, checkAgentFrame.event.Errors(frame))
          return await sessionEvent(deps, ws.data, frame)
        default:
          return sendError(ws, 'unknown_type', `unknown frame type ${type.slice(0, 64)}`)
      }
    } catch (e) {
      deps.log.error('agent frame failed', { server_id: ws.data.serverId, type, error: e })
      sendError(ws, 'internal_error', 'the service could not process this frame; it was dropped')
    }
  }
}

/** The first schema error of a frame, as the agent reads it: `<type><path>: <message>`. */
function invalid(ws: Socket, type: string, errors: Parameters<typeof firstFrameError>[1]): void {
  sendError(ws, 'validation_failed', firstFrameError(type, errors))
}

/** An agent older than the minimum is told why, then its session is closed. */
function helloed(ws: Socket, refusal: Refusal | undefined): void {
  if (!refusal) return
  refuse(ws, refusal)
  ws.close(4426, 'unsupported agent version')
}
