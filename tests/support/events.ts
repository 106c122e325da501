import { EventSource } from 'eventsource'
import { liveEventTypes } from '../../src/modules/live'
import type { TestApp } from './app'

/**
 * Followers of the live event stream (GET /api/v1/events/stream) for the tests:
 * - `LiveClient`, the real WHATWG EventSource client (the `eventsource` package), with its `fetch`
 *   option setting the credential and, to resume, a Last-Event-ID header;
 * - `RawStream`, the bytes as they come, parsed line by line, for what an EventSource hides
 *   (comment lines, the `retry:` field, how the stream ends).
 */

export type LiveEvent = { id: string; type: string; data: Record<string, any> }
export type Credential = { token: string } | { cookie: string } | null

const PATH = '/api/v1/events/stream'

function credentialHeaders(c: Credential): Record<string, string> {
  if (c === null) return {}
  return 'token' in c ? { authorization: `Bearer ${c.token}` } : { cookie: `__Host-gpuhq_session=${c.cookie}` }
}

type Waiter = { pred: (e: LiveEvent) => boolean; resolve: (e: LiveEvent) => void }

export class LiveClient {
  /** Every client not yet closed, so a file's afterAll can close what a failed test left open. */
  static readonly live = new Set<LiveClient>()
  readonly events: LiveEvent[] = []
  /** Statuses of the answers the client got (a reconnect adds one). */
  readonly statuses: number[] = []
  #waiters: Waiter[] = []
  readonly #es: EventSource

  private constructor(app: TestApp, credential: Credential, opts: { lastEventId?: string; query?: string }) {
    const url = `${app.url}${PATH}${opts.query ? `?${opts.query}` : ''}`
    let first = true
    this.#es = new EventSource(url, {
      fetch: async (input, init) => {
        const headers = new Headers(init?.headers)
        for (const [k, v] of Object.entries(credentialHeaders(credential))) headers.set(k, v)
        // Resuming in a new client: what a reconnecting EventSource sends by itself.
        if (first && opts.lastEventId !== undefined) headers.set('last-event-id', opts.lastEventId)
        first = false
        const res = await fetch(input, { ...init, headers })
        this.statuses.push(res.status)
        return res
      },
    })
    for (const type of liveEventTypes())
      this.#es.addEventListener(type, (e) => {
        const event = { id: e.lastEventId, type, data: JSON.parse(e.data) as Record<string, any> }
        this.events.push(event)
        this.#waiters = this.#waiters.filter((w) => {
          if (!w.pred(event)) return true
          w.resolve(event)
          return false
        })
      })
    LiveClient.live.add(this)
  }

  /** Opens a stream and waits for its `stream.open` (rejects when the service refuses it). */
  static async open(app: TestApp, credential: Credential, opts: { lastEventId?: string; query?: string } = {}): Promise<LiveClient> {
    const client = new LiveClient(app, credential, opts)
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no stream.open within 10 s (statuses ${client.statuses.join(', ')})`)), 10_000)
      client.#es.addEventListener('error', () => {
        if (client.#es.readyState === EventSource.CLOSED) {
          clearTimeout(t)
          reject(new Error(`the stream was refused (statuses ${client.statuses.join(', ')})`))
        }
      })
      void client
        .waitFor((e) => e.type === 'stream.open', 10_000)
        .then(() => {
          clearTimeout(t)
          resolve()
        }, reject)
    })
    return client
  }

  /** The next event (already received or still to come) matching `pred`. */
  waitFor(pred: (e: LiveEvent) => boolean, timeoutMs = 10_000): Promise<LiveEvent> {
    const found = this.events.find(pred)
    if (found) return Promise.resolve(found)
    return new Promise((resolve, reject) => {
      const t = setTimeout(
        () => reject(new Error(`no matching event within ${timeoutMs} ms; got ${JSON.stringify(this.events.map((e) => `${e.id} ${e.type}`))}`)),
        timeoutMs,
      )
      this.#waiters.push({
        pred,
        resolve: (e) => {
          clearTimeout(t)
          resolve(e)
        },
      })
    })
  }

  /** The events that are changes (not the stream's own). */
  changes(): LiveEvent[] {
    return this.events.filter((e) => !e.type.startsWith('stream.'))
  }

  /** The id of the last event received: what a reconnecting EventSource would send as Last-Event-ID. */
  lastEventId(): string {
    return this.events[this.events.length - 1]?.id ?? ''
  }

  close(): void {
    this.#es.close()
    LiveClient.live.delete(this)
  }
}

/** Closes every client still open (for afterAll, before the app stops). */
export function closeAllClients(): void {
  for (const c of [...LiveClient.live]) c.close()
}

type RawFrame = { kind: 'event'; id: string | null; event: string; data: string } | { kind: 'comment'; text: string } | { kind: 'retry'; ms: number }

/**
 * The stream read with fetch and parsed per the WHATWG rules (lines end in LF, CR or CRLF; a blank
 * line dispatches; a line starting with ":" is a comment), keeping what an EventSource hides.
 */
export class RawStream {
  readonly frames: RawFrame[] = []
  ended = false
  readonly done: Promise<void>
  #reader: ReadableStreamDefaultReader<Uint8Array>
  #notify: (() => void)[] = []

  constructor(readonly response: Response) {
    this.#reader = response.body!.getReader() as unknown as ReadableStreamDefaultReader<Uint8Array>
    this.done = this.#read()
  }

  static async open(app: TestApp, credential: Credential, headers: Record<string, string> = {}, query = ''): Promise<RawStream> {
    const res = await fetch(`${app.url}${PATH}${query}`, { headers: { ...credentialHeaders(credential), accept: 'text/event-stream', ...headers } })
    return new RawStream(res)
  }

  async #read(): Promise<void> {
    const decoder = new TextDecoder()
    let buffer = ''
    let fields: { id: string | null; event: string; data: string[] } = { id: null, event: 'message', data: [] }
    try {
      for (;;) {
        const { done, value } = await this.#reader.read()
        if (done) break
        buffer += decoder.decode(value, { stream: true })
        for (;;) {
          const m = /\r\n|\r|\n/.exec(buffer)
          if (!m) break
          const line = buffer.slice(0, m.index)
          buffer = buffer.slice(m.index + m[0].length)
          if (line === '') {
            if (fields.data.length) this.#push({ kind: 'event', id: fields.id, event: fields.event, data: fields.data.join('\n') })
            fields = { id: null, event: 'message', data: [] }
          } else if (line.startsWith(':')) this.#push({ kind: 'comment', text: line.slice(1).trim() })
          else {
            const colon = line.indexOf(':')
            const name = colon < 0 ? line : line.slice(0, colon)
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
            if (name === 'id') fields.id = value
            else if (name === 'event') fields.event = value
            else if (name === 'data') fields.data.push(value)
            else if (name === 'retry' && /^\d+$/.test(value)) this.#push({ kind: 'retry', ms: Number(value) })
          }
        }
      }
    } catch {
      // The connection was cut (the reader was cancelled, or the service dropped it).
    } finally {
      this.ended = true
      for (const n of this.#notify.splice(0)) n()
    }
  }

  #push(frame: RawFrame): void {
    this.frames.push(frame)
    for (const n of this.#notify.splice(0)) n()
  }

  events(): Extract<RawFrame, { kind: 'event' }>[] {
    return this.frames.filter((f): f is Extract<RawFrame, { kind: 'event' }> => f.kind === 'event')
  }

  /** Waits until `pred` holds over the frames (or the stream ended and it still does not). */
  async until(pred: (s: RawStream) => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!pred(this)) {
      if (this.ended) throw new Error(`the stream ended first; frames: ${JSON.stringify(this.frames).slice(0, 800)}`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`not within ${timeoutMs} ms; frames: ${JSON.stringify(this.frames).slice(0, 800)}`)
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left)
        this.#notify.push(() => {
          clearTimeout(t)
          resolve()
        })
      })
    }
  }

  async cancel(): Promise<void> {
    await this.#reader.cancel().catch(() => {})
    await this.done
  }
}
