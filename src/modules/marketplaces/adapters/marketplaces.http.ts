import { request } from 'undici'
import { sha256Hex } from '../../../platform/secrets'
import type { AdapterOptions, MarketplaceCall, MarketplaceId } from './marketplaces.adapter'

/**
 * What both adapters share on the wire: one outbound request through undici with timeouts, a
 * per-key pacer that spaces calls to the platform's published limits, and the record of every call
 * for the operations log. Neither the key nor a query string carrying it is ever logged.
 */

const DEFAULT_TIMEOUT_MS = 15_000

export type PlatformAnswer = { status: number; text: string; headers: Record<string, string | string[] | undefined> }

/** The platform could not be asked: refused connection, reset, timeout. */
export class PlatformUnreachable extends Error {
  constructor(readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause))
    this.name = 'PlatformUnreachable'
  }
}

export async function send(
  options: Pick<AdapterOptions, 'timeoutMs' | 'beforeCall'>,
  req: { url: string; method: string; headers: Record<string, string>; body?: string },
): Promise<PlatformAnswer> {
  const timeout = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  await options.beforeCall?.()
  try {
    const res = await request(req.url, {
      method: req.method as 'GET',
      headers: req.headers,
      body: req.body,
      headersTimeout: timeout,
      bodyTimeout: timeout,
      signal: AbortSignal.timeout(timeout),
    })
    return { status: res.statusCode, text: await res.body.text(), headers: res.headers }
  } catch (e) {
    throw new PlatformUnreachable(e)
  }
}

/**
 * Spaces calls that share a bucket (one key, one endpoint family) at least `intervalMs` apart, in
 * the order they were asked for. Wall time, not the service clock: the platform's limit is real.
 * One pacer per adapter instance; buckets are named by a hash of the key, never the key.
 */
export class Pacer {
  readonly #next = new Map<string, Promise<void>>()
  readonly #lastStart = new Map<string, number>()
  /**
   * A bucket this pacer has not used yet counts as used when the pacer was made: a process cannot
   * know when the one before it (a restart) last called, so its first call of each bucket keeps the
   * spacing from its own start (a bulk operation resumed at once after a restart would otherwise
   * arrive inside the platform's threshold: tests/bulk/bulk.test.ts).
   */
  readonly #born = performance.now()

  constructor(private readonly scale = 1) {}

  async run<T>(apiKey: string, endpoint: string, intervalMs: number, fn: () => Promise<T>): Promise<T> {
    const bucket = `${sha256Hex(apiKey).slice(0, 16)}|${endpoint}`
    const previous = this.#next.get(bucket) ?? Promise.resolve()
    let release: () => void = () => {}
    const mine = new Promise<void>((resolve) => {
      release = resolve
    })
    const tail = previous.then(() => mine)
    this.#next.set(bucket, tail)
    await previous
    try {
      const wait = (this.#lastStart.get(bucket) ?? this.#born) + intervalMs * this.scale - performance.now()
      if (wait > 0) await Bun.sleep(wait)
      this.#lastStart.set(bucket, performance.now())
      return await fn()
    } finally {
      release()
      // Nobody queued behind this call: forget the bucket's chain (its last start is kept).
      if (this.#next.get(bucket) === tail) this.#next.delete(bucket)
    }
  }
}

/** Times one call and reports it to the operations log (path only: the query may hold the key). */
export async function recorded<T extends PlatformAnswer>(
  options: Pick<AdapterOptions, 'onCall' | 'nowUs'>,
  call: { marketplace: MarketplaceId; operation: string; method: string; url: string },
  fn: () => Promise<T>,
  outcomeOf: (answer: T) => MarketplaceCall['outcome'],
): Promise<T> {
  const startedAtUs = options.nowUs()
  const started = performance.now()
  const path = new URL(call.url).pathname
  const report = (status: number | null, outcome: MarketplaceCall['outcome']) =>
    options.onCall?.({
      marketplace: call.marketplace,
      operation: call.operation,
      method: call.method,
      path,
      startedAtUs,
      latencyMs: Math.round(performance.now() - started),
      status,
      outcome,
    })
  try {
    const answer = await fn()
    report(answer.status, outcomeOf(answer))
    return answer
  } catch (e) {
    report(null, 'unavailable')
    throw e
  }
}
