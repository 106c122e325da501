/**
 * The one clock every reading of "now" goes through (docs/operations.md "The test clock"). Time is kept as
 * integer microseconds since the Unix epoch, the precision of the wire's timestamps.
 *
 * The test clock is real time plus an offset that only grows, so time keeps flowing between calls
 * and a test can jump forward instead of waiting.
 */
export interface Clock {
  /** Microseconds since the epoch. */
  nowUs(): number
  now(): Date
}

const originUs = Math.round(performance.timeOrigin * 1000)

/** Real time with microsecond resolution (Date.now() alone has only milliseconds). */
export function realNowUs(): number {
  return originUs + Math.floor(performance.now() * 1000)
}

export class SystemClock implements Clock {
  nowUs(): number {
    return realNowUs()
  }
  now(): Date {
    return new Date(Math.floor(this.nowUs() / 1000))
  }
}

export class TestClock implements Clock {
  #offsetUs: number
  constructor(
    offsetUs = 0,
    private readonly onChange: (offsetUs: number) => Promise<void> | void = () => {},
  ) {
    this.#offsetUs = offsetUs
  }
  /** Resolves once the last move is kept (the offset is stored in the database, src/deps.ts). */
  saved: Promise<void> = Promise.resolve()
  get offsetUs(): number {
    return this.#offsetUs
  }
  nowUs(): number {
    return realNowUs() + this.#offsetUs
  }
  now(): Date {
    return new Date(Math.floor(this.nowUs() / 1000))
  }
  /** Moves time forward by whole or fractional seconds; never backward. */
  advance(seconds: number): number {
    if (!(seconds >= 0)) throw new RangeError('the test clock only moves forward')
    this.#offsetUs += Math.round(seconds * 1_000_000)
    const kept = this.onChange(this.#offsetUs)
    if (kept instanceof Promise) this.saved = kept
    return this.nowUs()
  }
  /** Jumps to `targetUs` when that lies ahead; a target in the past is refused. */
  setNow(targetUs: number): number {
    const delta = targetUs - this.nowUs()
    if (delta < 0) throw new RangeError('the test clock only moves forward')
    return this.advance(delta / 1_000_000)
  }
}
