import { expect } from 'bun:test'
import { type SQL, sql } from 'drizzle-orm'
import { connect } from 'node:net'
import { createAccount } from '../../src/modules/accounts'
import { fleetRuntime } from '../../src/modules/fleet'
import { GOOD_PASSWORD, newEmail, sessionFrom, withSession } from './accounts'
import type { TestApp } from './app'

/**
 * Helpers for the fleet tests. Everything goes through real HTTP and real WebSockets against the
 * real app; the only rows written straight into the database are the ones no HTTP operation
 * writes yet (a tenant's plan and account state), as the access tests do.
 */

export type Owner = { tenantId: string; userId: string; email: string; session: string; headers: Record<string, string> }

/** A new tenant (free plan, as the operator creates it) and its owner, signed in over HTTP. */
export async function newOwner(app: TestApp, tag = 'fleet', plan?: string): Promise<Owner> {
  const email = newEmail(tag)
  const { tenantId, userId, ticket } = await createAccount({ deps: app.deps, input: { email, tenantName: `${tag} rigs` } })
  const res = await app.fetch('/api/v1/auth/password-reset/complete', { method: 'POST', json: { ticket, password: GOOD_PASSWORD } })
  expect(res.status).toBe(200)
  const session = sessionFrom(res)
  expect(session).not.toBeNull()
  if (plan) await setPlan(app, tenantId, plan)
  return { tenantId, userId, email, session: session!, headers: withSession(session!) }
}

/** A second tenant for isolation checks: another owner, on the same plan rules. */
export const insertSecondTenant = (app: TestApp, plan = 'pro') => newOwner(app, 'stranger', plan)

export async function setPlan(app: TestApp, tenantId: string, plan: string | null): Promise<void> {
  await app.deps.db.run(sql`UPDATE tenants SET plan_code = ${plan} WHERE id = ${tenantId}`)
}

export async function setAccountState(app: TestApp, tenantId: string, state: 'active' | 'grace' | 'frozen'): Promise<void> {
  await app.deps.db.run(sql`UPDATE tenants SET account_state = ${state} WHERE id = ${tenantId}`)
}

/** One request to /api/v1 as the owner. */
export function api(
  app: TestApp,
  owner: Owner | null,
  method: string,
  path: string,
  opts: { json?: unknown; headers?: Record<string, string> } = {},
): Promise<Response> {
  return app.fetch(`/api/v1${path}`, { method, json: opts.json, headers: { ...(owner?.headers ?? {}), ...opts.headers } })
}

/** A 2xx JSON answer, or a failure that shows the body. */
export async function ok<T = any>(res: Response | Promise<Response>, status = 200): Promise<T> {
  const r = await res
  const text = await r.text()
  expect({ status: r.status, body: text }).toMatchObject({ status })
  return (text ? JSON.parse(text) : null) as T
}

export type InitToken = { id: string; token: string; expires_at: string; server_id: string | null }

/** POST /tokens/init with the owner's session. */
export async function mintInitToken(app: TestApp, owner: Owner, body: Record<string, unknown> = {}): Promise<InitToken> {
  return ok<InitToken>(api(app, owner, 'POST', '/tokens/init', { json: body }), 201)
}

let hostSeq = 0
export type Facts = {
  agent_version: string
  hostname: string
  fingerprint?: string | null
  public_ip?: string | null
  disk_gb?: number | null
  port_range?: string | null
  gpus: { index: number; model: string; memory_mb?: number | null; uuid?: string | null }[]
}

/** Host facts of a made-up rig with `gpuCount` RTX 4090s; every call a new hostname and fingerprint. */
function hostFacts(overrides: Partial<Facts> = {}, gpuCount = 2): Facts {
  const n = ++hostSeq
  return {
    agent_version: '1.4.0',
    hostname: `rig-${n}-${Date.now().toString(36)}`,
    fingerprint: `sha256:${Bun.hash(`fp-${n}-${Math.random()}`).toString(16)}`,
    public_ip: '203.0.113.7',
    disk_gb: 3800,
    port_range: '40000-40199',
    gpus: Array.from({ length: gpuCount }, (_, i) => ({ index: i, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24564, uuid: `GPU-${n}-${i}` })),
    ...overrides,
  }
}

/** POST /agent/register (public) with an init token and host facts. */
export function register(app: TestApp, initToken: string, facts: Partial<Facts> = {}): Promise<Response> {
  return app.fetch('/api/v1/agent/register', { method: 'POST', json: { init_token: initToken, ...hostFacts(facts) } })
}

export type Enrolled = { server_id: string; agent_token: string; ws_url: string; heartbeat_interval_s: number; telemetry_interval_s: number }

/** Mints an init token (optional body) and registers a raw agent with it; answers the enrolment. */
export async function enrolAgent(
  app: TestApp,
  owner: Owner,
  facts: Partial<Facts> = {},
  tokenBody: Record<string, unknown> = {},
): Promise<Enrolled & { facts: Facts }> {
  const { token } = await mintInitToken(app, owner, tokenBody)
  const full = hostFacts(facts)
  const body = await ok<Enrolled>(app.fetch('/api/v1/agent/register', { method: 'POST', json: { init_token: token, ...full } }), 201)
  return { ...body, facts: full }
}

/** POST /agent/hello with an agent credential. */
export function httpsHello(app: TestApp, agentToken: string, facts: Partial<Facts> = {}): Promise<Response> {
  return app.fetch('/api/v1/agent/hello', { method: 'POST', json: hostFacts(facts), headers: { authorization: `Bearer ${agentToken}` } })
}

const wsUrlOf = (app: TestApp) => app.url.replace(/^http/, 'ws') + '/api/v1/agent/ws'

export type Frame = { type: string; [k: string]: any }

/**
 * A raw agent on a real WebSocket: connects with the bearer credential, sends frames, collects
 * every frame the service sends, and reports how the session closed.
 */
export class RawAgent {
  /** Every agent not yet closed, so a file's afterAll can close what a failed test left open. */
  static readonly live = new Set<RawAgent>()
  readonly frames: Frame[] = []
  closeCode: number | null = null
  closeReason = ''
  readonly closed: Promise<{ code: number; reason: string }>
  #waiters: { pred: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = []
  #seq = 0
  #barrier = 0

  private constructor(readonly ws: WebSocket) {
    this.closed = new Promise((resolve) => {
      ws.addEventListener('close', (e) => {
        RawAgent.live.delete(this)
        this.closeCode = e.code
        this.closeReason = e.reason
        resolve({ code: e.code, reason: e.reason })
      })
    })
    ws.addEventListener('message', (e) => {
      const frame = JSON.parse(String(e.data)) as Frame
      this.frames.push(frame)
      this.#waiters = this.#waiters.filter((w) => {
        if (!w.pred(frame)) return true
        w.resolve(frame)
        return false
      })
    })
  }

  /** Opens a session; rejects when the upgrade is refused. */
  static async connect(app: TestApp, agentToken: string): Promise<RawAgent> {
    const ws = new WebSocket(wsUrlOf(app), { headers: { authorization: `Bearer ${agentToken}` } } as unknown as string[])
    const agent = new RawAgent(ws)
    RawAgent.live.add(agent)
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('WebSocket did not open within 30 s')), 30_000)
      ws.addEventListener('open', () => {
        clearTimeout(t)
        resolve()
      })
      ws.addEventListener('close', (e) => {
        clearTimeout(t)
        reject(new Error(`WebSocket closed before opening (${e.code})`))
      })
    })
    return agent
  }

  /** Connects and completes hello → welcome. */
  static async start(app: TestApp, agentToken: string, facts: Partial<Facts> = {}): Promise<{ agent: RawAgent; welcome: Frame }> {
    const agent = await RawAgent.connect(app, agentToken)
    const welcome = agent.waitFor((f) => f.type === 'welcome')
    agent.send({ type: 'hello', ...hostFacts(facts) })
    return { agent, welcome: await welcome }
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN
  }

  send(frame: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(frame))
  }

  sendRaw(data: string | Uint8Array): void {
    this.ws.send(data)
  }

  heartbeat(): void {
    this.send({ type: 'heartbeat', seq: ++this.#seq })
  }

  /** A telemetry frame with one GPU-scope sample per entry of `gpus` and optional host values. */
  telemetry(gpus: Record<number, Record<string, number | null>>, host?: Record<string, number | null>, t = new Date().toISOString()): void {
    const samples: Record<string, unknown>[] = Object.entries(gpus).map(([i, values]) => ({ t, scope: 'gpu', gpu_index: Number(i), values }))
    if (host) samples.push({ t, scope: 'host', values: host })
    this.send({ type: 'telemetry', samples })
  }

  event(kind: string, severity: string, message: string, data?: Record<string, unknown>): void {
    this.send({ type: 'event', kind, severity, message, ...(data ? { data } : {}) })
  }

  /** The next frame (already received or still to come) matching `pred`. */
  waitFor(pred: (f: Frame) => boolean, timeoutMs = 30_000, since = 0): Promise<Frame> {
    const found = this.frames.slice(since).find(pred)
    if (found) return Promise.resolve(found)
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no matching frame within ${timeoutMs} ms; got ${JSON.stringify(this.frames).slice(0, 500)}`)), timeoutMs)
      this.#waiters.push({
        pred,
        resolve: (f) => {
          clearTimeout(t)
          resolve(f)
        },
      })
    })
  }

  /** Sends a frame and answers the next `error` frame the service sends after it. */
  async expectError(frame: string | Record<string, unknown>): Promise<Frame> {
    const since = this.frames.length
    const next = this.waitFor((f) => f.type === 'error', 5000, since)
    if (typeof frame === 'string') this.sendRaw(frame)
    else this.send(frame)
    return next
  }

  /**
   * Waits until the service has handled every frame sent so far: frames of one session are
   * handled in order, so the `error` answer to a deliberately unknown frame type sent last proves
   * everything before it was processed. The barrier's own error frame is removed from `frames`.
   */
  async barrier(): Promise<void> {
    const type = `barrier_${++this.#barrier}`
    const since = this.frames.length
    this.send({ type })
    const f = await this.waitFor((x) => x.type === 'error' && typeof x.message === 'string' && x.message.endsWith(type), 5000, since)
    this.frames.splice(this.frames.indexOf(f), 1)
  }

  /** The frames received, without the barrier answers. */
  errors(): Frame[] {
    return this.frames.filter((f) => f.type === 'error')
  }

  async close(code = 1000): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return
    this.ws.close(code)
    await Promise.race([this.closed, Bun.sleep(3000)])
  }
}

/** Closes every agent session still open (for afterAll, before the app stops). */
export async function closeAllAgents(): Promise<void> {
  await Promise.all([...RawAgent.live].map((a) => a.close()))
}

/** Stops a test app after closing the sessions a failed test may have left open. */
export async function stopApp(app: TestApp): Promise<void> {
  await closeAllAgents()
  await app.close()
}

/**
 * A raw HTTP/1.1 WebSocket upgrade request on a plain TCP socket, so the status the service
 * answers before any upgrade can be read (a WebSocket client hides it).
 */
export function rawUpgrade(app: TestApp, authorization: string | null): Promise<{ status: number; headers: string; body: string }> {
  const { hostname, port } = new URL(app.url)
  return new Promise((resolve, reject) => {
    const sock = connect({ host: hostname, port: Number(port) })
    let data = ''
    const t = setTimeout(() => {
      sock.destroy()
      reject(new Error('no answer to the upgrade within 30 s'))
    }, 30_000)
    const finish = () => {
      clearTimeout(t)
      const [head, ...rest] = data.split('\r\n\r\n')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1] ?? 0)
      resolve({ status, headers: head ?? '', body: rest.join('\r\n\r\n') })
      sock.destroy()
    }
    sock.on('data', (chunk) => {
      data += chunk.toString('utf8')
      const [head, body] = data.split('\r\n\r\n')
      const len = Number(/content-length: *(\d+)/i.exec(head ?? '')?.[1] ?? -1)
      if (body !== undefined && (len < 0 ? /^HTTP\/1\.1 101/.test(head!) : Buffer.byteLength(body) >= len)) finish()
    })
    sock.on('end', finish)
    sock.on('error', (e) => {
      clearTimeout(t)
      reject(e)
    })
    sock.write(
      [
        'GET /api/v1/agent/ws HTTP/1.1',
        `Host: ${hostname}:${port}`,
        'Upgrade: websocket',
        'Connection: Upgrade',
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
        'Sec-WebSocket-Version: 13',
        ...(authorization !== null ? [`Authorization: ${authorization}`] : []),
        '',
        '',
      ].join('\r\n'),
    )
  })
}

/** Moves the service clock forward. */
export async function advance(app: TestApp, seconds: number): Promise<void> {
  await ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
}

/** Runs one scheduled job now (presence.sweep also writes the buffered heartbeats and telemetry). */
export async function runJob(app: TestApp, job: 'presence.sweep' | 'fleet.snapshot'): Promise<{ outcome: string; detail: string }> {
  return ok(app.fetch(`/api/v1/_test/jobs/${job}/run`, { method: 'POST' }))
}

export type ServerDetail = Record<string, any> & { id: string; presence: string; last_seen_at: string | null; version: number }

export async function getServer(app: TestApp, owner: Owner, id: string): Promise<ServerDetail> {
  return ok<ServerDetail>(api(app, owner, 'GET', `/servers/${id}`))
}

export type FleetList = {
  generated_at: string
  data_as_of: string
  version: number
  stale: boolean
  stale_reason: string | null
  items: Record<string, any>[]
  next_cursor: string | null
}

export async function listServers(app: TestApp, owner: Owner, query: Record<string, string> = {}): Promise<FleetList> {
  const qs = new URLSearchParams(query).toString()
  return ok<FleetList>(api(app, owner, 'GET', `/servers${qs ? `?${qs}` : ''}`))
}

export type ServerEvent = {
  id: string
  server_id: string
  kind: string
  severity: string
  message: string
  data: Record<string, unknown> | null
  created_at: string
}

export async function serverEvents(
  app: TestApp,
  owner: Owner,
  id: string,
  query: Record<string, string> = {},
): Promise<{ items: ServerEvent[]; next_cursor: string | null }> {
  const qs = new URLSearchParams(query).toString()
  return ok(api(app, owner, 'GET', `/servers/${id}/events${qs ? `?${qs}` : ''}`))
}

/**
 * Polls `check` until it returns a truthy value (or throws the last failure after `timeoutMs`). The
 * deadline only bounds a test that would otherwise hang: it is generous, since a loaded machine may
 * take seconds for what takes milliseconds here, and a test must not fail on speed.
 */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 30_000, everyMs = 25): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs
  let last: unknown = null
  for (;;) {
    try {
      const v = await check()
      if (v) return v
      last = new Error('condition still false')
    } catch (e) {
      last = e
    }
    if (Date.now() > until) throw last
    await Bun.sleep(everyMs)
  }
}

async function count(app: TestApp, query: SQL): Promise<number> {
  return (await app.deps.db.get<{ n: number }>(query))!.n
}

/** Row counts of the tables a session can write to, to show a bad frame stored nothing. */
export async function fleetRowCounts(app: TestApp) {
  // A reader of the fleet: the presence steps waiting in memory (hello, close) are written first, as
  // every request of the service does before it reads.
  await fleetRuntime(app.deps).settle()
  return {
    events: await count(app, sql`SELECT count(*) AS n FROM server_events`),
    metrics: await count(app, sql`SELECT count(*) AS n FROM server_latest_metrics`),
    servers: await app.deps.db.all(sql`SELECT id, presence, last_seen_at, hostname, gpu_count, version FROM servers ORDER BY id`),
  }
}
