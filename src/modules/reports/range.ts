import { formatTimestamp, parseDay, utcDay } from '../../platform/time'
import { localDay, localDayStart } from '../../platform/zoned'
import { invalidReportQuery } from './reports.errors'

/**
 * The range of a report (docs/reports.md "Ranges and time zones"): `from` and `to` are calendar
 * dates, both included, at most 366 days apart; by default the last 7 days, today included. The
 * days are those of one zone: UTC for the reports built from the marketplaces' accrual rows (kept per
 * UTC day, so a row is never split), the account's zone for those built from timestamps (spend).
 */

const MAX_RANGE_DAYS = 366
const DEFAULT_DAYS = 7
const DAY_MS = 86_400_000

type GroupBy = 'day' | 'week' | 'month'

/** One period of the answer: its name, its first and last date, and the instants [fromUs, toUs) they span. */
export type Period = { period: string; from: string; to: string; fromUs: number; toUs: number }

export type Range = {
  from: string
  to: string
  days: number
  groupBy: GroupBy
  /** The zone the days are counted in. */
  zone: string
  fromUs: number
  toUs: number
  periods: Period[]
}

export type RangeInput = { from?: string; to?: string; group_by?: GroupBy; days?: number }

const msOf = (date: string) => Date.parse(`${date}T00:00:00Z`)
const dateOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const addDays = (date: string, n: number) => dateOf(msOf(date) + n * DAY_MS)

function parseDate(path: string, text: string): string {
  if (parseDay(text) === null) throw invalidReportQuery(path, 'format', `${path.slice(1)} must be a calendar date, YYYY-MM-DD`)
  const year = Number(text.slice(0, 4))
  if (year < 2000) throw invalidReportQuery(path, 'too_small', `${path.slice(1)} must be in 2000 or later`)
  if (year > 2099) throw invalidReportQuery(path, 'too_large', `${path.slice(1)} must be in 2099 or earlier`)
  return text
}

/** The first instant (µs) of a date in the zone. */
const dayStart = (zone: string, date: string) => (zone === 'UTC' ? parseDay(date)! : localDayStart(zone, date))

/** The period a date belongs to: the date, the Monday of its week (ISO weeks), or its month. */
function periodOf(date: string, groupBy: GroupBy): string {
  if (groupBy === 'day') return date
  if (groupBy === 'month') return date.slice(0, 7)
  const weekday = (new Date(msOf(date)).getUTCDay() + 6) % 7 // Monday 0 … Sunday 6
  return addDays(date, -weekday)
}

/** A range's dates alone: what names the answer (its cache key), cheap to work out. */
export type RangeDates = Pick<Range, 'from' | 'to' | 'days' | 'groupBy' | 'zone'>

/**
 * Resolves the query into dates; a range the rules refuse is 422 with a pointer. Cheap (no periods),
 * so a request answered from the cache or refused by a rate limit does not pay for the periods.
 */
export function resolveDates(input: RangeInput, zone: string, nowUs: number): RangeDates {
  if (input.days !== undefined && (input.from !== undefined || input.to !== undefined))
    throw invalidReportQuery('/days', 'exclusive_with_from_to', 'days cannot be combined with from or to')
  const today = zone === 'UTC' ? utcDay(nowUs) : localDay(zone, nowUs)
  const to = input.to === undefined ? today : parseDate('/to', input.to)
  const from = input.from === undefined ? addDays(to, -((input.days ?? DEFAULT_DAYS) - 1)) : parseDate('/from', input.from)
  if (from > to) throw invalidReportQuery('/from', 'after_to', `from must be on or before to (${to}${input.to === undefined ? ', today' : ''})`)
  const days = Math.round((msOf(to) - msOf(from)) / DAY_MS) + 1
  if (days > MAX_RANGE_DAYS) throw invalidReportQuery('/from', 'range_too_large', `at most ${MAX_RANGE_DAYS} days; this range has ${days}`)
  return { from, to, days, groupBy: input.group_by ?? 'day', zone }
}

/** The range's periods and instants, for building the answer. */
export function expandRange({ from, to, days, groupBy, zone }: RangeDates): Range {
  const periods: Period[] = []
  for (let date = from; date <= to; date = addDays(date, 1)) {
    const name = periodOf(date, groupBy)
    const last = periods.at(-1)
    if (last?.period === name) last.to = date
    else periods.push({ period: name, from: date, to: date, fromUs: 0, toUs: 0 })
  }
  for (const p of periods) {
    p.fromUs = dayStart(zone, p.from)
    p.toUs = dayStart(zone, addDays(p.to, 1))
  }
  return { from, to, days, groupBy, zone, fromUs: periods[0]!.fromUs, toUs: periods.at(-1)!.toUs, periods }
}

/** The index of the period holding a date (YYYY-MM-DD), or -1 outside the range. */
export function periodIndexOfDate(range: Range, date: string): number {
  if (date < range.from || date > range.to) return -1
  return range.periods.findIndex((p) => date <= p.to)
}

/** The index of the period holding an instant (µs), or -1 outside the range. */
export function periodIndexOfInstant(range: Range, us: number): number {
  if (us < range.fromUs || us >= range.toUs) return -1
  return range.periods.findIndex((p) => us < p.toUs)
}

/** What every report says about its range and periods on the wire. */
export function rangeView(range: Range) {
  return {
    from: range.from,
    to: range.to,
    days: range.days,
    group_by: range.groupBy,
    timezone: range.zone,
    from_at: formatTimestamp(range.fromUs),
    to_at: formatTimestamp(range.toUs),
  }
}

export function periodView(p: Period) {
  return { period: p.period, from: p.from, to: p.to, from_at: formatTimestamp(p.fromUs), to_at: formatTimestamp(p.toUs) }
}
