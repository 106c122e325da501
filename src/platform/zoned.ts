/**
 * Calendar arithmetic in an IANA time zone without a library: local days, local midnights and the
 * billing ranges (today, yesterday, 7d, month, prev_month) as half-open UTC instants. Correct across
 * DST changes: a local day is 23, 24 or 25 hours long.
 */
const formatters = new Map<string, Intl.DateTimeFormat>()

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
    formatters.set(tz, f)
  }
  return f
}

type LocalDate = { y: number; m: number; d: number }

/** Local calendar fields of an instant (ms). */
function localParts(tz: string, ms: number) {
  const p: Record<string, number> = {}
  for (const part of formatter(tz).formatToParts(new Date(ms))) if (part.type !== 'literal') p[part.type] = Number(part.value)
  return p as { year: number; month: number; day: number; hour: number; minute: number; second: number }
}

/** Offset of the zone from UTC at an instant, in ms (local = utc + offset). */
function zoneOffsetMs(tz: string, ms: number): number {
  const p = localParts(tz, ms)
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second)
  return asUtc - (ms - (((ms % 1000) + 1000) % 1000))
}

function localDateOf(tz: string, us: number): LocalDate {
  const p = localParts(tz, Math.floor(us / 1000))
  return { y: p.year, m: p.month, d: p.day }
}

/** The first instant (µs) of a local calendar day. */
function startOfLocalDay(tz: string, date: LocalDate): number {
  const wall = Date.UTC(date.y, date.m - 1, date.d)
  // Two passes settle the offset even when midnight sits next to a DST change.
  let guess = wall - zoneOffsetMs(tz, wall)
  guess = wall - zoneOffsetMs(tz, guess)
  // Where local midnight does not exist (a DST jump at 00:00), the day starts at the first instant after it.
  const p = localParts(tz, guess)
  if (p.day !== date.d) guess += 3600_000
  return guess * 1000
}

function addDays(date: LocalDate, n: number): LocalDate {
  const t = new Date(Date.UTC(date.y, date.m - 1, date.d + n))
  return { y: t.getUTCFullYear(), m: t.getUTCMonth() + 1, d: t.getUTCDate() }
}

/** The local calendar date (YYYY-MM-DD) holding an instant (µs) in the zone. */
export function localDay(tz: string, us: number): string {
  const d = localDateOf(tz, us)
  return `${String(d.y).padStart(4, '0')}-${String(d.m).padStart(2, '0')}-${String(d.d).padStart(2, '0')}`
}

/** The first instant (µs) of a local calendar date (YYYY-MM-DD) in the zone. */
export function localDayStart(tz: string, day: string): number {
  const [y, m, d] = day.split('-').map(Number) as [number, number, number]
  return startOfLocalDay(tz, { y, m, d })
}

export const BILLING_RANGES = ['today', 'yesterday', '7d', 'month', 'prev_month'] as const
export type BillingRange = (typeof BILLING_RANGES)[number]

/** A billing range in the zone as [from, to) in µs; 7d is today and the six days before it. */
export function rangeBounds(range: BillingRange, tz: string, nowUs: number): { from: number; to: number } {
  const today = localDateOf(tz, nowUs)
  const day = (d: LocalDate) => startOfLocalDay(tz, d)
  switch (range) {
    case 'today':
      return { from: day(today), to: day(addDays(today, 1)) }
    case 'yesterday':
      return { from: day(addDays(today, -1)), to: day(today) }
    case '7d':
      return { from: day(addDays(today, -6)), to: day(addDays(today, 1)) }
    case 'month':
      return { from: day({ y: today.y, m: today.m, d: 1 }), to: day(today.m === 12 ? { y: today.y + 1, m: 1, d: 1 } : { y: today.y, m: today.m + 1, d: 1 }) }
    case 'prev_month':
      return { from: day(today.m === 1 ? { y: today.y - 1, m: 12, d: 1 } : { y: today.y, m: today.m - 1, d: 1 }), to: day({ y: today.y, m: today.m, d: 1 }) }
  }
}
