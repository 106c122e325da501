import { expect } from 'bun:test'
import { call, type Caller } from '../support/access'
import type { TestApp } from '../support/app'

/**
 * Helpers for the report tests: reading a report over HTTP, parsing CSV (RFC 4180, independently
 * of src/platform/csv.ts) and local calendar dates with the runtime's own Intl (not src/platform/zoned.ts).
 */

export type Answer<T> = { res: Response; body: T; text: string }

/** GET /reports/<name>?<qs> as `caller`; expects `status` and answers the parsed JSON (or the text for CSV). */
export async function report<T = any>(
  app: TestApp,
  caller: Caller,
  name: string,
  qs = '',
  status = 200,
  headers: Record<string, string> = {},
): Promise<Answer<T>> {
  const res = await call(app, 'GET', `/reports/${name}${qs ? `?${qs}` : ''}`, caller, { headers })
  const text = await res.text()
  expect({ status: res.status, body: text.slice(0, 500) }).toMatchObject({ status })
  const json = (res.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : text
  return { res, body: json as T, text }
}

/** An RFC 4180 document as rows of cells (quoted cells unquoted, doubled quotes undone); the last CRLF ends the last row. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let cell = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"'
        i++
      } else if (c === '"') quoted = false
      else cell += c
    } else if (c === '"') quoted = true
    else if (c === ',') {
      row.push(cell)
      cell = ''
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell)
      rows.push(row)
      row = []
      cell = ''
      i++
    } else cell += c
  }
  expect(cell).toBe('')
  expect(row).toEqual([])
  return rows
}

/** CSV rows as objects keyed by the header row. */
export function csvRecords(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text)
  return rows.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!])))
}

const dateFormats = new Map<string, Intl.DateTimeFormat>()
/** The calendar date (YYYY-MM-DD) of an instant (µs) in `zone`. */
export function localDate(zone: string, us: number): string {
  let f = dateFormats.get(zone)
  if (!f) dateFormats.set(zone, (f = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' })))
  return f.format(new Date(Math.floor(us / 1000)))
}

export const addDays = (date: string, n: number) => new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10)

/** The Monday (YYYY-MM-DD) of a date's ISO week. */
export const mondayOf = (date: string) => addDays(date, -((new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7))

/** Sums values by key. */
export function sumBy<T>(items: T[], key: (t: T) => string, value: (t: T) => number): Map<string, number> {
  const out = new Map<string, number>()
  for (const t of items) out.set(key(t), (out.get(key(t)) ?? 0) + value(t))
  return out
}

/**
 * For the files about what reports say (not what they cost): the expensive-read limits off, since
 * they read many reports in a row on the test clock. tests/reports/cost.test.ts tests the limits.
 */
export const UNLIMITED_REPORTS = { RATE_LIMIT_EXPENSIVE_READS_PER_MINUTE: '0', RATE_LIMIT_TENANT_EXPENSIVE_READS_PER_MINUTE: '0' }
