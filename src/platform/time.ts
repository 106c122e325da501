/**
 * Wire timestamps: RFC 3339 in UTC with exactly six fraction digits, e.g.
 * `2026-11-22T14:20:00.123456Z`. Inside, time is integer microseconds since the epoch.
 */

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0')
}

export function formatTimestamp(us: number): string {
  if (!Number.isSafeInteger(us)) throw new RangeError(`not a microsecond timestamp: ${us}`)
  const ms = Math.floor(us / 1000)
  const micros = us - ms * 1000
  const iso = new Date(ms).toISOString() // YYYY-MM-DDTHH:MM:SS.mmmZ
  return `${iso.slice(0, 23)}${pad(micros, 3)}Z`
}

export function formatNullableTimestamp(us: number | null | undefined): string | null {
  return us === null || us === undefined ? null : formatTimestamp(us)
}

/**
 * Parses an RFC 3339 timestamp with any offset into microseconds, keeping microsecond precision.
 * Up to nine fraction digits are accepted (Go's RFC3339Nano); digits past the sixth are truncated.
 * Returns null for anything that is not a real instant (bad shape, 2026-02-30, 25:00, …).
 */
export function parseTimestamp(text: string): number | null {
  const m = RFC3339.exec(text)
  if (!m) return null
  const [, y, mo, d, h, mi, s, frac = '', z, sign, oh, om] = m
  const year = Number(y),
    month = Number(mo),
    day = Number(d)
  const hour = Number(h),
    minute = Number(mi),
    second = Number(s)
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null
  if (hour > 23 || minute > 59 || second > 59) return null
  let offsetMin = 0
  if (!z) {
    const ohN = Number(oh),
      omN = Number(om)
    if (ohN > 23 || omN > 59) return null
    offsetMin = (sign === '-' ? -1 : 1) * (ohN * 60 + omN)
  }
  const ms = Date.UTC(year, month - 1, day, hour, minute, second) - offsetMin * 60_000
  const micros = Number((frac + '000000').slice(0, 6))
  const us = ms * 1000 + micros
  return Number.isSafeInteger(us) ? us : null
}

export function daysInMonth(year: number, month1: number): number {
  return new Date(Date.UTC(year, month1, 0)).getUTCDate()
}

/** `YYYY-MM-DD` of the UTC day holding `us`. */
export function utcDay(us: number): string {
  return new Date(Math.floor(us / 1000)).toISOString().slice(0, 10)
}

/** Parses a `YYYY-MM-DD` calendar day to the microsecond of its UTC midnight, or null. */
export function parseDay(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text)
  if (!m) return null
  const year = Number(m[1]),
    month = Number(m[2]),
    day = Number(m[3])
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null
  return Date.UTC(year, month - 1, day) * 1000
}

const US_PER_SECOND = 1_000_000
export const US_PER_HOUR = 3600 * US_PER_SECOND
export const US_PER_DAY = 24 * US_PER_HOUR
