import { permits, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { scopeOfType } from './live.catalogue'
import { eventsAfter, type LiveEventRow } from './live.repository'

/** Events read per query while a stream catches up. */
const BATCH = 200
/**
 * Bytes a stream may hold that its client has not taken yet (past what the kernel's socket buffers
 * hold): a client that stops reading is disconnected, never buffered without bound.
 */
const MAX_QUEUED_BYTES = 1024 * 1024
const ENCODER = new TextEncoder()

export type EndReason = 'unauthorized' | 'shutdown'

/** One event in the WHATWG text/event-stream format; `data` is one line of JSON (JSON.stringify never writes a line break). */
export function sseFrame(event: string, data: string, id?: number): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${data}\n\n`
}

const frameOf = (r: LiveEventRow) => sseFrame(r.type, r.payload, r.seq)

/**
 * One client's stream: where it is in its tenant's events (`cursor`, the last event id it was shown or skipped),
 * who it serves (re-checked at least every poll interval: a revoked token or an ended session ends
 * it), and its body, fed by `pump` whenever the hub wakes it.
 */
export class LiveStream {
  readonly body: ReadableStream<Uint8Array>
  #controller!: ReadableStreamDefaultController<Uint8Array>
  #cursor: number
  #actor: Actor
  #checkedAt = performance.now()
  #closed = false
  #pumping = false
  #again = false
  #sent = 0
  readonly #opened = performance.now()

  constructor(
    private readonly deps: Deps,
    readonly tenantId: string,
    actor: Actor,
    cursor: number,
    preamble: string,
    private readonly recheck: () => Promise<Actor | null>,
    private readonly onFinish: (stream: LiveStream) => void,
  ) {
    this.#actor = actor
    this.#cursor = cursor
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller
          controller.enqueue(ENCODER.encode(preamble))
        },
        // The client went away (or Bun's idle timeout closed the connection).
        cancel: () => this.#finish('client gone'),
      },
      new ByteLengthQueuingStrategy({ highWaterMark: 0 }),
    )
  }

  get closed(): boolean {
    return this.#closed
  }

  /** Sends what the buffer holds for this client after its cursor, oldest first; runs once at a time. */
  async pump(): Promise<void> {
    if (this.#closed) return
    if (this.#pumping) {
      this.#again = true
      return
    }
    this.#pumping = true
    try {
      do {
        this.#again = false
        if (!(await this.#authorized(false))) return
        const rows = await eventsAfter(this.deps.db, this.tenantId, this.#cursor, BATCH)
        if (rows.length === 0) break
        // Nothing leaves on the strength of a commit that is not on disk yet (docs/operations.md "Durability").
        await this.deps.durable.barrier()
        if (this.#closed) return
        let text = ''
        for (const r of rows) {
          this.#cursor = r.seq
          const scope = scopeOfType(r.type)
          if (scope && permits(this.#actor, scope, r.serverId)) {
            text += frameOf(r)
            this.#sent++
          }
        }
        if (text) this.#write(text)
        if (rows.length === BATCH) this.#again = true
      } while (this.#again && !this.#closed)
    } catch (error) {
      // The next wake, poll or heartbeat tries again from the same cursor: nothing is skipped.
      this.deps.log.error('live stream could not be fed', { tenant_id: this.tenantId, error })
    } finally {
      this.#pumping = false
    }
  }

  /** A comment line that keeps the connection (and proxies) from timing out; the caller is checked again first. */
  async heartbeat(): Promise<void> {
    if (this.#closed || !(await this.#authorized(true)) || this.#closed) return
    this.#write(': keep-alive\n\n')
    void this.pump()
  }

  /** Ends the stream with a last `stream.end` event saying why. */
  end(reason: EndReason): void {
    if (this.#closed) return
    try {
      this.#controller.enqueue(ENCODER.encode(sseFrame('stream.end', JSON.stringify({ type: 'stream.end', reason }))))
      this.#controller.close()
    } catch {
      // Already closed by the client.
    }
    this.#finish(reason)
  }

  /** Whether the caller may still read: checked again when `force`d or a poll interval after the last check. */
  async #authorized(force: boolean): Promise<boolean> {
    if (!force && performance.now() - this.#checkedAt < this.deps.config.liveEvents.pollMs) return true
    let actor: Actor | null
    try {
      actor = await this.recheck()
    } catch (error) {
      // A busy database, say: keep the last answer until the next check.
      this.deps.log.warn('live stream caller not checked again', { tenant_id: this.tenantId, error })
      return true
    }
    this.#checkedAt = performance.now()
    if (!actor) {
      this.end('unauthorized')
      return false
    }
    this.#actor = actor
    return true
  }

  #write(text: string): void {
    if (this.#closed) return
    try {
      this.#controller.enqueue(ENCODER.encode(text))
    } catch {
      this.#finish('client gone')
      return
    }
    if ((this.#controller.desiredSize ?? 0) < -MAX_QUEUED_BYTES) {
      // Dropped at once, queue and all: a client that does not read would never take a farewell either.
      this.#controller.error(new Error('the client does not read the stream'))
      this.#finish('too slow')
    }
  }

  #finish(reason: string): void {
    if (this.#closed) return
    this.#closed = true
    this.onFinish(this)
    this.deps.log.info('live stream closed', {
      tenant_id: this.tenantId,
      reason,
      events_sent: this.#sent,
      cursor: this.#cursor,
      duration_ms: Math.round(performance.now() - this.#opened),
    })
  }
}
