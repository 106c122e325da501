import type { Server, ServerWebSocket } from 'bun'
import { checkAgentFrame, checkAnyFrame, checkHelloBody, checkRegisterBody, firstFrameError, HelloBody, RegisterBody, type ServiceFrame } from '#protocol'

/**
 * A local stand-in for the gpuhq service side of the agent protocol (docs/agent.md):
 * POST /agent/register, POST /agent/hello and the WebSocket session at GET /agent/ws. Strict like
 * the real service: bodies and frames are checked by the protocol's own compiled checkers
 * (protocol/agent.ts) and unknown body fields are refused, a frame that fails is answered with an
 * `error` frame (and kept in `refused`), a bad credential is refused before the upgrade, one live
 * session per server (a newer one closes the older with 4409).
 */

export type Frame = Record<string, unknown> & { type: string }
type Conn = {
  id: number
  serverId: string
  frames: Frame[]
  refused: { frame: unknown; error: string }[]
  ws: ServerWebSocket<{ conn: Conn }>
  closed: boolean
}

const REGISTER_FIELDS = new Set(Object.keys(RegisterBody.properties))
const HELLO_FIELDS = new Set(Object.keys(HelloBody.properties))

let counter = 0
const agentToken = () => `gpuhq_agt_${(++counter).toString().padStart(4, '0')}${'x'.repeat(42)}`
const initToken = (tag = Math.random().toString(36).slice(2)) => `gpuhq_init_${tag.padEnd(46, 'y')}`

export class FakeService {
  readonly initTokens = new Map<string, 'unused' | 'used'>()
  readonly credentials = new Map<string, string>() // agent token → server id
  readonly registrations: Record<string, unknown>[] = []
  readonly hellos: { auth: string | null; body: Record<string, unknown> }[] = []
  readonly conns: Conn[] = []
  readonly upgradeAuth: (string | null)[] = []
  /** What the next register answers instead of 201 (409, 426 …). */
  registerProblem: { status: number; code: string; detail?: string } | null = null
  welcome = { heartbeat_interval_s: 1, telemetry_interval_s: 1 }
  private server: Server<{ conn: Conn }>

  constructor() {
    this.server = Bun.serve<{ conn: Conn }>({
      port: 0,
      hostname: '127.0.0.1',
      fetch: (req, server) => this.fetch(req, server),
      websocket: {
        open: (ws) => {
          const conn = ws.data.conn
          conn.ws = ws
          for (const other of this.conns) if (other.serverId === conn.serverId && !other.closed) other.ws.close(4409, 'replaced by a newer session')
          this.conns.push(conn)
        },
        message: (ws, message) => {
          const conn = ws.data.conn
          const reply = (frame: ServiceFrame): void => void ws.send(JSON.stringify(frame))
          const frame: unknown = JSON.parse(String(message))
          if (!checkAnyFrame.Check(frame)) {
            conn.refused.push({ frame, error: 'not a JSON object with a string type' })
            return reply({ type: 'error', code: 'validation_failed', message: 'a frame must be a JSON object with a string type' })
          }
          conn.frames.push(frame as Frame)
          const check = Object.hasOwn(checkAgentFrame, frame.type) ? checkAgentFrame[frame.type as keyof typeof checkAgentFrame] : undefined
          if (!check) {
            conn.refused.push({ frame, error: 'unknown type' })
            return reply({ type: 'error', code: 'unknown_type', message: `unknown frame type ${frame.type.slice(0, 64)}` })
          }
          if (!check.Check(frame)) {
            const error = firstFrameError(frame.type, check.Errors(frame))
            conn.refused.push({ frame, error })
            return reply({ type: 'error', code: 'validation_failed', message: error })
          }
          if (frame.type === 'hello') reply({ type: 'welcome', server_id: conn.serverId, ...this.welcome })
        },
        close: (ws) => {
          ws.data.conn.closed = true
        },
      },
    })
  }

  get url(): string {
    return `http://127.0.0.1:${this.server.port}`
  }

  issueInitToken(): string {
    const token = initToken()
    this.initTokens.set(token, 'unused')
    return token
  }

  revoke(agentTokenValue: string): void {
    this.credentials.delete(agentTokenValue)
  }

  /** The newest open session. */
  live(): Conn | undefined {
    return [...this.conns].reverse().find((c) => !c.closed)
  }

  send(frame: Frame): void {
    const conn = this.live()
    if (!conn) throw new Error('no live session')
    conn.ws.send(JSON.stringify(frame))
  }

  allFrames(): Frame[] {
    return this.conns.flatMap((c) => c.frames)
  }

  async stop(): Promise<void> {
    await this.server.stop(true)
  }

  private async fetch(req: Request, server: Server<{ conn: Conn }>): Promise<Response | undefined> {
    const path = new URL(req.url).pathname
    const auth = req.headers.get('authorization')
    if (path === '/api/v1/agent/register' && req.method === 'POST') return this.register((await req.json()) as Record<string, unknown>)
    if (path === '/api/v1/agent/hello' && req.method === 'POST') {
      const body = (await req.json()) as Record<string, unknown>
      this.hellos.push({ auth, body })
      if (!this.serverFor(auth)) return problem(401, 'unauthorized')
      if (Object.keys(body).some((k) => !HELLO_FIELDS.has(k)) || !checkHelloBody.Check(body)) return problem(422, 'validation_failed')
      return new Response(null, { status: 204 })
    }
    if (path === '/api/v1/agent/ws') {
      this.upgradeAuth.push(auth)
      const serverId = this.serverFor(auth)
      if (!serverId) return problem(401, 'unauthorized')
      const conn = { id: this.conns.length + 1, serverId, frames: [], refused: [], closed: false } as unknown as Conn
      if (server.upgrade(req, { data: { conn } })) {
        return undefined
      }
      return problem(400, 'validation_failed')
    }
    return problem(404, 'not_found')
  }

  private register(body: Record<string, unknown>): Response {
    this.registrations.push(body)
    if (Object.keys(body).some((k) => !REGISTER_FIELDS.has(k)) || !checkRegisterBody.Check(body)) return problem(422, 'validation_failed')
    if (this.registerProblem) return problem(this.registerProblem.status, this.registerProblem.code, this.registerProblem.detail)
    const token = String(body.init_token)
    if (this.initTokens.get(token) !== 'unused') return problem(401, 'unauthorized')
    this.initTokens.set(token, 'used')
    const serverId = crypto.randomUUID()
    const agent = agentToken()
    this.credentials.set(agent, serverId)
    return Response.json(
      {
        server_id: serverId,
        agent_token: agent,
        ws_url: this.url.replace('http', 'ws') + '/api/v1/agent/ws',
        heartbeat_interval_s: 15,
        telemetry_interval_s: 60,
      },
      { status: 201 },
    )
  }

  private serverFor(auth: string | null): string | undefined {
    const m = /^Bearer (gpuhq_agt_\S+)$/.exec(auth ?? '')
    return m ? this.credentials.get(m[1]!) : undefined
  }
}

function problem(status: number, code: string, detail?: string): Response {
  return Response.json(
    { type: `http://gpuhq.test/problems/${code}`, title: code, status, code, ...(detail ? { detail } : {}) },
    { status, headers: { 'content-type': 'application/problem+json' } },
  )
}

/** Polls until `check` returns a truthy value (or fails after `ms`). */
export async function waitFor<T>(check: () => T | undefined | null | false, ms = 10_000, what = 'condition'): Promise<T> {
  const until = Date.now() + ms
  for (;;) {
    const value = check()
    if (value) return value
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(20)
  }
}
