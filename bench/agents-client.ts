/**
 * One client process of bench/agents.ts: it holds a share of the agent sessions (raw WebSockets),
 * so the benchmark's own file descriptors are spread over several processes and only the service
 * is bound by one process's limit. The parent drives it over Bun's IPC channel: each message is a
 * command with an id, answered once done with the same id. Not meant to be run by hand.
 */
type Session = { ws: WebSocket | null; token: string; serverId: string; hello: string; seq: number; welcomed: boolean; onBarrier: (() => void) | null }
export type ClientCommand =
  | { id: number; cmd: 'init'; url: string; sessions: { token: string; serverId: string; hello: string }[]; openConcurrency: number; deadlineMs: number }
  /** Opens this client's sessions: all, or the first or second half of them. */
  | { id: number; cmd: 'open'; heartbeatOnWelcome: boolean; half?: 1 | 2 }
  | { id: number; cmd: 'heartbeat' }
  | { id: number; cmd: 'rounds'; rounds: number }
  | { id: number; cmd: 'barrier' }
  | { id: number; cmd: 'close' }
  | { id: number; cmd: 'ticker'; everyMs: number | null }
export type ClientReply = { id: number; ok: boolean; error?: string }

let url = ''
let sessions: Session[] = []
let openConcurrency = 64
let deadlineMs = 300_000
let ticker: ReturnType<typeof setInterval> | null = null

process.on('message', (m: ClientCommand) => {
  run(m).then(
    () => process.send!({ id: m.id, ok: true } satisfies ClientReply),
    (e: unknown) => process.send!({ id: m.id, ok: false, error: e instanceof Error ? e.message : String(e) } satisfies ClientReply),
  )
})
process.on('disconnect', () => process.exit(0))

async function run(m: ClientCommand): Promise<void> {
  switch (m.cmd) {
    case 'init':
      url = m.url
      sessions = m.sessions.map((s) => ({ ...s, ws: null, seq: 0, welcomed: false, onBarrier: null }))
      openConcurrency = m.openConcurrency
      deadlineMs = m.deadlineMs
      return
    case 'open': {
      const mid = Math.ceil(sessions.length / 2)
      return openAll(m.half === 1 ? sessions.slice(0, mid) : m.half === 2 ? sessions.slice(mid) : sessions, m.heartbeatOnWelcome)
    }
    case 'heartbeat':
      for (const s of sessions) heartbeat(s)
      return
    case 'rounds':
      for (let r = 0; r < m.rounds; r++) {
        for (const s of sessions) heartbeat(s)
        await Bun.sleep(0)
      }
      return
    case 'barrier':
      return barrierAll()
    case 'close':
      for (const s of sessions) s.ws?.close(1001, 'bench reconnect')
      return
    case 'ticker':
      if (ticker) clearInterval(ticker)
      ticker = null
      // Reopened sessions keep heartbeating at the protocol's interval, as real agents do.
      if (m.everyMs !== null)
        ticker = setInterval(() => {
          for (const s of sessions) if (s.welcomed && s.ws?.readyState === WebSocket.OPEN) heartbeat(s)
        }, m.everyMs)
      return
  }
}

/** Opens the sessions (at most openConcurrency at a time), hello → welcome, and optionally one heartbeat. */
async function openAll(sessions: Session[], heartbeatOnWelcome: boolean): Promise<void> {
  let next = 0
  const deadline = Date.now() + deadlineMs
  const openOne = (s: Session) =>
    new Promise<void>((resolve, reject) => {
      s.welcomed = false
      const ws = new WebSocket(url, { headers: { authorization: `Bearer ${s.token}` } } as unknown as string[])
      s.ws = ws
      const timer = setTimeout(() => reject(new Error(`session of ${s.serverId} got no welcome within 60 s`)), 60_000)
      ws.onopen = () => ws.send(s.hello)
      ws.onmessage = (e) => {
        const f = JSON.parse(String(e.data)) as { type: string; message?: string }
        if (f.type === 'error' && f.message?.endsWith('bench_barrier')) {
          const done = s.onBarrier
          s.onBarrier = null
          done?.()
          return
        }
        if (s.welcomed || f.type !== 'welcome') return
        s.welcomed = true
        clearTimeout(timer)
        if (heartbeatOnWelcome) heartbeat(s)
        resolve()
      }
      ws.onclose = (e) => {
        clearTimeout(timer)
        if (!s.welcomed) reject(new Error(`session of ${s.serverId} closed before welcome (${e.code})`))
      }
    })
  const worker = async () => {
    while (next < sessions.length) {
      if (Date.now() > deadline) throw new Error('opening the sessions took too long')
      await openOne(sessions[next++]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(openConcurrency, sessions.length) }, worker))
}

/**
 * Resolves once the service has handled every frame each session sent so far: frames of one
 * session are handled in order, and an unknown frame type sent last is answered with an error.
 */
async function barrierAll(): Promise<void> {
  await Promise.all(
    sessions.map(
      (s) =>
        new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no barrier answer from ${s.serverId} within the phase deadline`)), deadlineMs)
          s.onBarrier = () => {
            clearTimeout(timer)
            resolve()
          }
          s.ws!.send('{"type":"bench_barrier"}')
        }),
    ),
  )
}

function heartbeat(s: Session): void {
  s.ws!.send(`{"type":"heartbeat","seq":${++s.seq}}`)
}
