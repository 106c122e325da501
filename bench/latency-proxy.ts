/**
 * A TCP proxy that adds a fixed delay to every chunk in each direction, for bench/scale-out.ts: the
 * service talks to PostgreSQL through it as it would to a database on another host (a managed
 * PostgreSQL is 0.3–1 ms away). Order is kept per direction; a chunk leaves `delayMs` after it
 * arrived, however many are in flight (the delay is latency, not a bandwidth limit).
 *
 *   const proxy = startLatencyProxy({ target: { hostname: '127.0.0.1', port: 5432 }, delayMs: 1 })
 *   // connect to 127.0.0.1:proxy.port … proxy.stop()
 */
import type { Socket } from 'bun'

type Pipe = {
  /** Chunks waiting for their time, in arrival order. */
  queue: { due: number; data: Uint8Array }[]
  /** Bytes the socket did not take yet (it said so); sent on drain. */
  backlog: Uint8Array[]
  timer: ReturnType<typeof setTimeout> | null
  to: Socket<unknown> | null
}

function newPipe(): Pipe {
  return { queue: [], backlog: [], timer: null, to: null }
}

function write(pipe: Pipe): void {
  const to = pipe.to
  if (!to) return
  while (pipe.backlog.length) {
    const chunk = pipe.backlog[0]!
    const n = to.write(chunk)
    if (n < chunk.length) {
      pipe.backlog[0] = chunk.subarray(n)
      return // the rest goes on drain
    }
    pipe.backlog.shift()
  }
}

function schedule(pipe: Pipe): void {
  if (pipe.timer || pipe.queue.length === 0) return
  const wait = Math.max(0, pipe.queue[0]!.due - performance.now())
  pipe.timer = setTimeout(() => {
    pipe.timer = null
    const now = performance.now()
    while (pipe.queue.length && pipe.queue[0]!.due <= now + 0.05) pipe.backlog.push(pipe.queue.shift()!.data)
    write(pipe)
    schedule(pipe)
  }, wait)
}

function delay(pipe: Pipe, data: Uint8Array, delayMs: number): void {
  pipe.queue.push({ due: performance.now() + delayMs, data: new Uint8Array(data) })
  schedule(pipe)
}

export function startLatencyProxy(options: { target: { hostname: string; port: number }; delayMs: number }): { port: number; stop: () => void } {
  type Conn = { up: Pipe; down: Pipe; server: Socket<unknown> | null; pending: Uint8Array[] }
  const server = Bun.listen<Conn>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        const conn: Conn = { up: newPipe(), down: newPipe(), server: null, pending: [] }
        conn.down.to = client as Socket<unknown>
        client.data = conn
        Bun.connect<Conn>({
          hostname: options.target.hostname,
          port: options.target.port,
          data: conn,
          socket: {
            open(upstream) {
              conn.server = upstream as Socket<unknown>
              conn.up.to = upstream as Socket<unknown>
              write(conn.up)
            },
            data(_upstream, data) {
              delay(conn.down, data, options.delayMs)
            },
            drain() {
              write(conn.up)
            },
            close() {
              client.end()
            },
            error() {
              client.end()
            },
          },
        }).catch(() => client.end())
      },
      data(client, data) {
        delay(client.data.up, data, options.delayMs)
      },
      drain(client) {
        write(client.data.down)
      },
      close(client) {
        client.data.server?.end()
      },
      error(client) {
        client.data.server?.end()
      },
    },
  })
  return { port: server.port, stop: () => server.stop(true) }
}

// `bun run bench/latency-proxy.ts <target host:port> <delay ms>`: the proxy on its own, printing its port.
if (import.meta.main) {
  const [host, port] = (process.argv[2] ?? '127.0.0.1:5432').split(':')
  const proxy = startLatencyProxy({ target: { hostname: host!, port: Number(port) }, delayMs: Number(process.argv[3] ?? 1) })
  console.log(proxy.port)
}
