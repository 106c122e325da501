/**
 * Exponential backoff with full jitter (AWS architecture blog, "Exponential Backoff And Jitter"):
 * the wait after the n-th consecutive failure is uniform in [0, min(cap, base · 2^n)), so a fleet
 * that lost the service at the same moment does not come back at the same moment.
 */
export type BackoffOptions = { baseMs: number; capMs: number; random?: () => number }

export function backoffCeiling(attempt: number, { baseMs, capMs }: BackoffOptions): number {
  // 2^attempt overflows to Infinity long after it passed any sane cap; min() handles that.
  return Math.min(capMs, baseMs * 2 ** Math.max(0, attempt))
}

export function backoffDelay(attempt: number, options: BackoffOptions): number {
  const random = options.random ?? Math.random
  return Math.floor(random() * backoffCeiling(attempt, options))
}
