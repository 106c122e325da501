import { formatShortest } from '../../platform/numbers'

/**
 * The Prometheus text exposition format, version 0.0.4 (docs/prometheus.md): one `# HELP` and one
 * `# TYPE` line per family, then its samples, each family's samples together. Label values escape
 * backslash, double quote and line feed; HELP text escapes backslash and line feed. Values are
 * written as text by the caller, so money stays the exact decimal of its micro-USD.
 */

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

const NEEDS_ESCAPE = /[\\"\n]/

/** A label value as the format writes it between its quotes (most need nothing: one test). */
export function escapeLabelValue(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return value
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}

const escapeHelp = (text: string) => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')

/** `{a="x",b="y"}` for label pairs in the order given (names are ours, values escaped). */
export function labelSet(pairs: readonly (readonly [string, string])[]): string {
  if (pairs.length === 0) return ''
  let text = '{'
  for (let i = 0; i < pairs.length; i++) text += `${i ? ',' : ''}${pairs[i]![0]}="${escapeLabelValue(pairs[i]![1])}"`
  return `${text}}`
}

/** A float as the format writes it: JavaScript's shortest round-trip digits, never in exponent notation (src/platform/numbers.ts). */
export function formatNumber(n: number): string {
  if (Number.isNaN(n)) return 'NaN'
  if (n === Number.POSITIVE_INFINITY) return '+Inf'
  if (n === Number.NEGATIVE_INFINITY) return '-Inf'
  return formatShortest(n)!
}

/** Microseconds since the epoch as exact decimal seconds (no float rounding): 1_500_000 → "1.5". */
export function formatSecondsOfUs(us: number): string {
  const whole = Math.floor(us / 1_000_000)
  const frac = String(us - whole * 1_000_000)
    .padStart(6, '0')
    .replace(/0+$/, '')
  return frac ? `${whole}.${frac}` : String(whole)
}

export type MetricType = 'gauge' | 'counter'

/**
 * Collects families in order; `take()` hands over what was written so far (a chunk of the body). Appended to one string (JavaScriptCore
 * keeps it as a rope until read), which for a hundred thousand samples is several times faster
 * than joining an array of lines.
 */
export class Exposition {
  #text = ''
  readonly #names = new Set<string>()

  /** Starts a family: its HELP and TYPE lines. A name may start only one family. */
  family(name: string, type: MetricType, help: string): void {
    if (this.#names.has(name)) throw new Error(`metric family ${name} written twice`)
    this.#names.add(name)
    this.#text += `# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${type}\n`
  }

  /** One sample of the family started last; `labels` is a labelSet() text. */
  sample(name: string, labels: string, value: string): void {
    this.#text += `${name}${labels} ${value}\n`
  }

  /** Characters written since the last take. */
  get pending(): number {
    return this.#text.length
  }

  /** The text written since the last take, and the start of the next. */
  take(): string {
    const text = this.#text
    this.#text = ''
    return text
  }
}

/**
 * How long one chunk of a streamed exposition may be written for, at most (one step more), and
 * how long its text may grow: appending is cheap (JavaScriptCore keeps a rope) and the chunk's
 * encoding, which flattens it, is where the time goes for megabytes of cheap samples.
 */
const CHUNK_MS = 8
const CHUNK_CHARS = 1 << 20

const yieldLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * The body of an exposition written by `write`, a generator that yields between steps of a few
 * hundred samples: each chunk runs its steps for CHUNK_MS or CHUNK_CHARS of text, whichever comes
 * first, then hands its text (encoded) to the stream, and
 * the next chunk starts only after the event loop has had a turn (setImmediate), so a scrape of
 * a large fleet never holds it for long. The text is the one `write` would have written in one go.
 */
export function streamExposition(write: (out: Exposition) => Generator<void, void, void>): ReadableStream<Uint8Array> {
  const out = new Exposition()
  const steps = write(out)
  const encoder = new TextEncoder()
  let first = true
  let done = false
  return new ReadableStream<Uint8Array>({
    // A pull must enqueue something (or close): the stream calls it again only after a chunk.
    // Steps that wrote nothing (preparing labels) are followed by more turns until one did.
    async pull(controller) {
      for (;;) {
        if (!first) await yieldLoop()
        first = false
        const until = performance.now() + CHUNK_MS
        while (!done && out.pending < CHUNK_CHARS && performance.now() < until) done = steps.next().done === true
        const text = out.take()
        if (text) controller.enqueue(encoder.encode(text))
        if (done) return controller.close()
        if (text) return
      }
    },
    cancel() {
      steps.return()
    },
  })
}
