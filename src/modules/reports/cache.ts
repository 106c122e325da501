import type { Clock } from '../../platform/clock'

/**
 * The reports' answer cache, one per app (made in the routes factory): each answer is kept for its
 * TTL on the service clock (the test clock expires it too), at most `maxEntries` answers and
 * `maxBytes` of text, least recently used out first. A report is recomputed at most once a TTL per
 * key; the key names the tenant, the caller's server allowlist, the report, its resolved range and
 * the format, so no answer reaches a caller who could not have asked for it.
 */
export type Cached<T> = { value: T; bytes: number; madeAt: number; expiresAt: number }

export class AnswerCache<T> {
  readonly #entries = new Map<string, Cached<T>>()
  #bytes = 0

  constructor(
    private readonly clock: Clock,
    private readonly limits: { ttlUs: number; maxEntries: number; maxBytes: number },
  ) {}

  get(key: string): Cached<T> | undefined {
    const hit = this.#entries.get(key)
    if (!hit) return undefined
    this.#drop(key, hit)
    if (hit.expiresAt <= this.clock.nowUs()) return undefined
    // Re-inserted: the Map's order is the order of use, oldest first.
    this.#entries.set(key, hit)
    this.#bytes += hit.bytes
    return hit
  }

  set(key: string, value: T, bytes: number): Cached<T> {
    const now = this.clock.nowUs()
    const entry = { value, bytes, madeAt: now, expiresAt: now + this.limits.ttlUs }
    const old = this.#entries.get(key)
    if (old) this.#drop(key, old)
    // An answer larger than the whole budget is served, not kept.
    if (bytes > this.limits.maxBytes) return entry
    for (const [k, e] of this.#entries) {
      if (this.#entries.size < this.limits.maxEntries && this.#bytes + bytes <= this.limits.maxBytes) break
      this.#drop(k, e)
    }
    this.#entries.set(key, entry)
    this.#bytes += bytes
    return entry
  }

  #drop(key: string, entry: Cached<T>): void {
    this.#entries.delete(key)
    this.#bytes -= entry.bytes
  }
}
