import type { Server } from 'bun'
import type { App } from './app'
import type { Deps } from './platform/context'
import { beginRequest, internalProblem, problemResponse, type RequestState } from './platform/http'
import { finishKey, releaseKey, RequestIdempotency, runWithIdempotency } from './platform/idempotency'
import { clientIp } from './platform/ip'
import { encodeResponse } from './platform/compression'
import { eventLoopTurn, forTheWire } from './platform/wire-body'
import { BUSY_PAUSES_MS, isDatabaseBusy } from '../db/client'
import { securityHeaders } from './platform/headers'
import { SAFE_METHODS } from './platform/access'
import { recordRequestAudit } from './modules/audit'
import { setSandboxSelfUrl } from './modules/payments'
import { AGENT_WS_PATH, agentWebSocket, upgradeAgent, type AgentSocketData } from './modules/agent'
import { agentSessions, fleetRuntime } from './modules/fleet'
import { liveHub } from './modules/live'

/**
 * Bun.serve around the Elysia app: gives each request its id and client address, writes the one
 * log line per request, stores idempotent responses, and drains in-flight requests on stop.
 */
export type RunningServer = { server: Server<AgentSocketData>; url: string; stop: () => Promise<void> }

/**
 * Bun's own body cap is lifted: past it Bun answers a bare 413 itself (no problem document; its
 * error handler is not called). The platform refuses a body over the configured limit instead
 * (src/platform/http.ts): a declared length before reading, a streamed body as it arrives.
 */
const BUN_BODY_CAP = Number.MAX_SAFE_INTEGER

/**
 * Seconds a connection may stay silent, answer being computed included. Bun's default (10 s)
 * closes the socket of a request still being worked on: a first computation of a long report, a
 * charge run the test clock asks for on a loaded machine, a slow upload got a reset instead of an
 * answer. Two minutes, well past any answer gpuhq gives, and still a bound on idle keep-alive and
 * trickling clients (docs/operations.md "Timeouts"); live streams write a heartbeat well within it.
 */
export const HTTP_IDLE_TIMEOUT_SECONDS = 120

export function startServer(app: App, deps: Deps, options: { port: number; hostname?: string }): RunningServer {
  app.compile()
  const server = Bun.serve<AgentSocketData>({
    port: options.port,
    hostname: options.hostname ?? '0.0.0.0',
    maxRequestBodySize: BUN_BODY_CAP,
    idleTimeout: HTTP_IDLE_TIMEOUT_SECONDS,
    development: false,
    // Bun turns SO_REUSEPORT on when development is false: a second instance would share the port
    // silently. Refused instead (EADDRINUSE), and main.ts says so in one line.
    reusePort: false,
    websocket: agentWebSocket(deps),
    async fetch(request, srv) {
      const peer = srv.requestIP(request)?.address ?? '127.0.0.1'
      const ip = clientIp(peer, request.headers.get('x-forwarded-for'), deps.config.trustedProxies)
      // Before Elysia: the upgrade needs Bun's server (srv.upgrade), which app.handle never has.
      if (request.headers.get('upgrade')?.toLowerCase() === 'websocket' && new URL(request.url).pathname === AGENT_WS_PATH) {
        await settlePresence(deps) // a new session starts after its predecessor's close, as the agent sees it
        const requestId = deps.newId()
        const refused = await upgradeAgent(deps, request, srv, requestId)
        deps.log.info('request', { method: 'GET', route: AGENT_WS_PATH, path: AGENT_WS_PATH, status: refused?.status ?? 101, request_id: requestId, ip })
        return refused
      }
      return handle(app, deps, request, ip)
    },
  })
  const url = `http://${options.hostname === '0.0.0.0' || !options.hostname ? '127.0.0.1' : options.hostname}:${server.port}`
  // The sandbox payment provider notifies this process as a real provider would, over HTTP.
  setSandboxSelfUrl(deps, url)
  return {
    server,
    url,
    stop: async () => {
      // An open agent session would hold a graceful stop forever: close each (1001 going away), so
      // its close handler requeues unaccepted commands while the database is still open.
      agentSessions(deps).closeAll(1001, 'service shutting down')
      // A live event stream never ends by itself: each is told (stream.end) and closed, so the
      // graceful stop below does not wait for it. Its client reconnects, to this or another process.
      liveHub(deps).closeAll('shutdown')
      await server.stop(false)
    },
  }
}

/**
 * Agent sessions' presence steps (a close, a hello, the heartbeat that brings a server online) are
 * group-committed; every request (an agent's session upgrade too) writes those waiting before it
 * runs, so whatever it reads (the fleet, events, the dashboard) already shows them (docs/fleet.md "Presence"). A failure leaves
 * them for the runtime's own timer; the request goes on.
 */
async function settlePresence(deps: Deps): Promise<void> {
  try {
    await fleetRuntime(deps).settle()
  } catch (error) {
    deps.log.warn('presence steps not written before a request', { error })
  }
}

/**
 * The request pipeline around Elysia's (issue 37 asked to fold it in where it can be). What Elysia's
 * lifecycle can do is in it: the request id header, access, body rules and problem documents
 * (src/platform/http.ts), the verb context (src/platform/api.ts). What is left here cannot be a hook
 * without changing what the service does, each for its reason:
 * - The client address comes from Bun's server (`requestIP`), which `app.handle` never sees; and the
 *   agent's WebSocket upgrade (startServer) needs that server object to upgrade, so it is answered
 *   before Elysia.
 * - The busy-database replay (runAttempts) runs the whole Elysia pipeline again on a copy of the
 *   body: a hook runs inside one pass and cannot start another. Presence steps are settled once per
 *   request before its first pass (and before an agent's upgrade), not once per pass.
 * - The idempotency scope wraps a whole pass, from parse to answer (an AsyncLocalStorage that counts
 *   the pass's write transactions); a hook sees one stage only.
 * - The stored idempotent answer, the fallback audit row and the log line are written once per
 *   request from its final answer, after every retry (Elysia's afterResponse runs once per pass, when
 *   the answer has left, and never for an answer made here, such as an unhandled failure's).
 * - The group-commit barrier holds the answer until its commits are on disk, after compression, which
 *   runs while the fsync does (sealAnswer); an answer that fails either is replaced, answers made here
 *   included, and every answer gets the security headers.
 */
async function handle(app: App, deps: Deps, request: Request, ip: string): Promise<Response> {
  const started = performance.now()
  const arrivedIn = eventLoopTurn()
  const path = new URL(request.url).pathname
  let { response, state } = await runAttempts(app, deps, request, ip)
  if (state.busy) deps.log.warn('database busy', { request_id: state.id, status: response.status })
  if (state.idempotency) {
    try {
      await finishKey(deps, state.idempotency, response)
    } catch (error) {
      deps.log.error('could not store idempotent response', { request_id: state.id, error })
    }
  }
  await recordFallbackAudit(deps, request, state, response.status, ip, path)
  response = forTheWire(request.method, await sealAnswer(deps, request, state, response), arrivedIn)
  deps.log.info('request', {
    method: request.method,
    route: state.route ?? null,
    path,
    status: response.status,
    duration_ms: Math.round((performance.now() - started) * 100) / 100,
    request_id: state.id,
    tenant_id: state.tenantId ?? null,
    ip,
  })
  return response
}

/**
 * A request that met a busy database (another process held the write lock past the driver's short
 * wait) before anything of it was written is run again after a pause that yields the event loop;
 * past the last pause it answers 503 with Retry-After. See docs/operations.md "A busy database".
 * Every attempt keeps the request's id and start; the state returned is the last attempt's.
 */
async function runAttempts(app: App, deps: Deps, request: Request, ip: string): Promise<{ response: Response; state: RequestState }> {
  const id = deps.newId()
  const startUs = deps.clock.nowUs()
  // A copy to run again: the body of the first attempt is consumed by the time we know. Only a body
  // of declared length within the limit is kept; a streamed or oversized one is never run again.
  const length = request.headers.get('content-length')
  const replayable = !request.body || (length !== null && Number(length) <= deps.config.bodyLimitBytes)
  const spare = request.body && replayable ? request.clone() : null
  await settlePresence(deps)
  let current = request
  let state = beginRequest(current, id, startUs, ip)
  let response: Response
  for (let attempt = 0; ; attempt++) {
    const scope = new RequestIdempotency(deps)
    try {
      response = await runWithIdempotency(scope, () => app.handle(current))
    } catch (error) {
      if (isDatabaseBusy(error)) state.busy = true
      else deps.log.error('unhandled failure', { request_id: state.id, error })
      response = problemResponse(internalProblem(error), deps.config.publicUrl, state.id)
    }
    if (!state.busy || !replayable || scope.beganCount > 0 || attempt >= BUSY_PAUSES_MS.length) break
    // Nothing was written: the next attempt takes the key up again.
    if (state.idempotency) releaseKey(deps, state.idempotency)
    await Bun.sleep(BUSY_PAUSES_MS[attempt]!)
    current = spare ? (spare.clone() as Request) : new Request(request.url, { method: request.method, headers: request.headers })
    state = beginRequest(current, id, startUs, ip)
  }
  return { response, state }
}

/** An operation's own audit row is part of its transaction; a failed one rolled it back with the change. */
async function recordFallbackAudit(deps: Deps, request: Request, state: RequestState, status: number, ip: string, path: string): Promise<void> {
  if (!state.tenantId || !state.actor || (state.audited && status < 400) || SAFE_METHODS.has(request.method)) return
  try {
    await recordRequestAudit(deps, {
      tenantId: state.tenantId,
      actorKind: state.actor.kind,
      actorId: state.actor.id,
      operation: `${request.method} ${state.route ?? path}`,
      status,
      ip,
      userAgent: request.headers.get('user-agent'),
      requestId: state.id,
    })
  } catch (error) {
    deps.log.error('could not write the audit row', { request_id: state.id, error })
  }
}

/**
 * Group commit (db/durability.ts): the answer leaves only once every commit before it is on disk,
 * this request's and whatever it read of others'. Concurrent answers share one fsync, which runs in
 * the thread pool while the answer is compressed. Then the request id and the security headers.
 */
async function sealAnswer(deps: Deps, request: Request, state: RequestState, answer: Response): Promise<Response> {
  let response = answer
  const durable = deps.durable.barrier().then(
    () => null,
    (error: unknown) => ({ error }),
  )
  try {
    response = await encodeResponse(request, response)
  } catch (error) {
    deps.log.error('could not encode the answer', { request_id: state.id, error })
    response = replaced(response, problemResponse(internalProblem(error), deps.config.publicUrl, state.id))
  }
  const failed = await durable
  if (failed) {
    deps.log.error('could not make the write durable (fsync failed)', { request_id: state.id, error: failed.error })
    response = replaced(response, problemResponse(internalProblem(failed.error), deps.config.publicUrl, state.id))
  }
  if (!response.headers.has('x-request-id')) response.headers.set('x-request-id', state.id)
  securityHeaders(response, {
    credentialed: state.actor !== undefined || request.headers.has('authorization') || request.headers.has('cookie'),
    https: deps.config.publicUrl.startsWith('https:'),
  })
  return response
}

/**
 * An answer given up for another: its body is cancelled, so a producer behind it (a live event
 * stream, which never ends by itself) learns that nobody will read it.
 */
function replaced(dropped: Response, next: Response): Response {
  if (dropped.body && !dropped.bodyUsed) dropped.body.cancel().catch(() => {})
  return next
}
