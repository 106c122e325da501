/**
 * Quiet hours in the account timezone (docs/notifications.md "Quiet hours"): a window [from, to) of
 * local wall-clock times, crossing midnight when `from` is after `to`. Computed with the platform's
 * IANA time zone data (Intl), so a DST change moves the UTC instants with the wall clock.
 */

type Window = { enabled: boolean; from: string; to: string }

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5))

/** The local wall-clock parts of a UTC instant in `timeZone`. */
function localParts(us: number, timeZone: string): { y: number; m: number; d: number; minutes: number } {
  const f = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  })
  const p = Object.fromEntries(f.formatToParts(new Date(Math.floor(us / 1000))).map((x) => [x.type, x.value]))
  return { y: Number(p.year), m: Number(p.month), d: Number(p.day), minutes: Number(p.hour) * 60 + Number(p.minute) }
}

/** The offset (local − UTC) of `timeZone` at a UTC instant, in microseconds. */
function offsetAt(us: number, timeZone: string): number {
  const p = localParts(us, timeZone)
  const asUtc = Date.UTC(p.y, p.m - 1, p.d, Math.floor(p.minutes / 60), p.minutes % 60) * 1000
  return asUtc - Math.floor(us / 60_000_000) * 60_000_000
}

/** The UTC instant of a local wall-clock time (a time skipped by DST moves to the first valid instant after it). */
function utcOf(y: number, m: number, d: number, minutes: number, timeZone: string): number {
  const wall = Date.UTC(y, m - 1, d, Math.floor(minutes / 60), minutes % 60) * 1000
  let guess = wall - offsetAt(wall, timeZone)
  guess = wall - offsetAt(guess, timeZone)
  const local = localParts(guess, timeZone)
  if (local.minutes === minutes && local.d === d) return guess
  // Skipped by a DST jump (02:30 on the spring-forward night in Berlin): the clock goes from just
  // before the gap to just after it, so the first valid instant at or after that wall time is the
  // jump itself. It lies between the wall time read at the new offset and at the old one; the
  // zone's data changes offset on a minute boundary, found by halving that span.
  const before = offsetAt(guess - 6 * 3_600_000_000, timeZone)
  const after = offsetAt(guess + 6 * 3_600_000_000, timeZone)
  let lo = Math.floor((wall - after) / 60_000_000)
  let hi = Math.floor((wall - before) / 60_000_000)
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2)
    if (offsetAt(mid * 60_000_000, timeZone) === after) hi = mid
    else lo = mid + 1
  }
  return hi * 60_000_000
}

function inWindow(minutes: number, w: Window): boolean {
  const from = minutesOf(w.from)
  const to = minutesOf(w.to)
  if (from === to) return false
  return from < to ? minutes >= from && minutes < to : minutes >= from || minutes < to
}

/**
 * When a non-critical notification made at `nowUs` may go: now outside the window, else the end of
 * the window (the next local `to`) in UTC.
 */
export function releaseAt(nowUs: number, w: Window, timeZone: string): number {
  if (!w.enabled) return nowUs
  const p = localParts(nowUs, timeZone)
  if (!inWindow(p.minutes, w)) return nowUs
  const to = minutesOf(w.to)
  // The window ends today if `to` is still ahead on the local clock, else tomorrow.
  const day = new Date(Date.UTC(p.y, p.m - 1, p.d + (p.minutes < to ? 0 : 1)))
  return Math.max(nowUs, utcOf(day.getUTCFullYear(), day.getUTCMonth() + 1, day.getUTCDate(), to, timeZone))
}
