import { afterCommit } from '../../../db/client'
import { perDeps, type Deps } from '../../platform/context'
import { lastIssuedId, newestByTenant } from './live.repository'
import type { EndReason, LiveStream } from './live.stream'

/**
 * This process's open live streams, by tenant, and what feeds them:
 * - a write of this process wakes its tenant's streams once its transaction is over (`wakeSoon`);
 * - a poll every LIVE_STREAM_POLL_MS asks the buffer which tenants have events newer than the last
 *   it saw, so events another process wrote (several instances on one database) arrive too;
 * - a heartbeat every LIVE_STREAM_HEARTBEAT_SECONDS checks each caller again and writes a comment
 *   line, so neither Bun's idle timeout nor a proxy closes a quiet stream.
 * The timers run only while a stream is open.
 */
class LiveHub {
  readonly #streams = new Map<string, Set<LiveStream>>()
  readonly #woken = new Set<string>()
  #wakeQueued = false
  #seen = 0
  #poll: ReturnType<typeof setInterval> | null = null
  #beat: ReturnType<typeof setInterval> | null = null
  /** The timers' start under way (it reads the last id first): streams added meanwhile wait for it. */
  #starting: Promise<void> | null = null
  /** A poll is reading: the next tick is skipped rather than read the same ids beside it. */
  #polling = false

  constructor(private readonly deps: Deps) {}

  /** Open streams of the tenant in this process. */
  count(tenantId: string): number {
    return this.#streams.get(tenantId)?.size ?? 0
  }

  async add(stream: LiveStream): Promise<void> {
    let set = this.#streams.get(stream.tenantId)
    if (!set) this.#streams.set(stream.tenantId, (set = new Set()))
    set.add(stream)
    // One start at a time; the streams may all have gone while it read, so look again after it.
    try {
      while (!this.#poll && this.#streams.size > 0) {
        this.#starting ??= this.#start().finally(() => {
          this.#starting = null
        })
        await this.#starting
      }
    } catch (e) {
      // Not opened (a busy database, say): the stream must not count against the tenant's streams.
      this.remove(stream)
      throw e
    }
    void stream.pump()
  }

  remove(stream: LiveStream): void {
    const set = this.#streams.get(stream.tenantId)
    if (!set?.delete(stream)) return
    if (set.size === 0) this.#streams.delete(stream.tenantId)
    if (this.#streams.size === 0) this.#stop()
  }

  /**
   * An event of the tenant is being written: its streams are fed once the running transaction has
   * committed (afterCommit: never inside it, never before its commit; after a rollback the wake is
   * dropped and the next poll finds nothing new anyway).
   */
  wakeSoon(tenantId: string): void {
    if (!this.#streams.has(tenantId)) return
    afterCommit(this.deps.db, () => {
      this.#woken.add(tenantId)
      if (this.#wakeQueued) return
      this.#wakeQueued = true
      queueMicrotask(() => {
        this.#wakeQueued = false
        const tenants = [...this.#woken]
        this.#woken.clear()
        for (const t of tenants) this.#wake(t)
      })
    })
  }

  /** Ends every stream (the service is stopping): each gets `stream.end` and its body closes. */
  closeAll(reason: EndReason): void {
    for (const set of [...this.#streams.values()]) for (const s of [...set]) s.end(reason)
    this.#stop()
  }

  #wake(tenantId: string): void {
    for (const s of this.#streams.get(tenantId) ?? []) void s.pump()
  }

  async #start(): Promise<void> {
    const { deps } = this
    const seen = await lastIssuedId(deps.db)
    // Every stream went away while the id was read: no timers (the next add starts them).
    if (this.#poll || this.#streams.size === 0) return
    this.#seen = seen
    this.#poll = setInterval(async () => {
      if (this.#polling) return
      this.#polling = true
      try {
        for (const { tenantId, id } of await newestByTenant(deps.db, this.#seen)) {
          this.#seen = Math.max(this.#seen, id)
          this.#wake(tenantId)
        }
      } catch (error) {
        deps.log.warn('live stream poll failed', { error })
      } finally {
        this.#polling = false
      }
    }, deps.config.liveEvents.pollMs)
    this.#beat = setInterval(() => {
      for (const set of [...this.#streams.values()]) for (const s of [...set]) void s.heartbeat()
    }, deps.config.liveEvents.heartbeatSeconds * 1000)
    this.#poll.unref()
    this.#beat.unref()
  }

  #stop(): void {
    if (this.#poll) clearInterval(this.#poll)
    if (this.#beat) clearInterval(this.#beat)
    this.#poll = null
    this.#beat = null
  }
}

/** The live hub of this process (one per Deps). */
export const liveHub = perDeps((deps) => new LiveHub(deps))
