import { expect } from 'bun:test'
import { sql } from 'drizzle-orm'
import { withTransaction } from '../../db/client'
import { adjustBalance, appendEntry } from '../../src/modules/billing'
import { call, insertServer, newTenant, setPlan, type Caller, type Member } from './access'
import type { TestApp } from './app'

/**
 * Helpers for the billing tests. Everything a user or the operator can do goes through real HTTP
 * (or the real operator CLI); the only rows written without it are the ones no HTTP operation
 * writes yet: servers (access.ts insertServer), a tenant's plan, and top-ups, which go through the
 * ledger module's own appendEntry (a real payment provider path comes later).
 *
 * Money and timestamps are parsed here independently of src/, so a formatting bug there shows.
 */

export const US_PER_SECOND = 1_000_000
export const US_PER_MINUTE = 60 * US_PER_SECOND
export const US_PER_HOUR = 60 * US_PER_MINUTE
export const US_PER_DAY = 24 * US_PER_HOUR
/** Starter: 2.00 USD per server per month (docs/billing.md "Plans"). */
export const STARTER_MICROS = 2_000_000

export type LedgerItem = {
  id: string
  tenant_id: string
  kind: 'charge' | 'topup' | 'adjustment'
  amount_usd: string
  balance_after_usd: string
  occurred_at: string
  charge_day: string | null
  charge_hour: string | null
  detail: string
  calculation_id: string | null
  created_at: string
}
type Tile = { spend_usd: string; from: string; to: string }
export type RangeName = 'today' | 'yesterday' | '7d' | 'month' | 'prev_month'
export const RANGES: RangeName[] = ['today', 'yesterday', '7d', 'month', 'prev_month']
export type Billing = {
  balance_usd: string
  account_state: 'active' | 'grace' | 'frozen'
  grace_since: string | null
  grace_ends_at: string | null
  frozen_at: string | null
  tariff: { plan: string | null; label: string | null; monthly_price_per_server_usd: string | null; contract_priced: boolean; servers_max: number | null }
  estimate: { managed_servers: number; per_day_usd: string | null; per_month_usd: string | null; days_in_month: number }
  days_left: number | null
  timezone: string
  tiles: Record<RangeName, Tile>
}

export { iso, micros, usOf } from './wire'
import { iso, micros, usOf } from './wire'
export const utcUs = (y: number, m1: number, d: number, h = 0, min = 0) => Date.UTC(y, m1 - 1, d, h, min) * 1000
export const hourOf = (us: number) => Math.floor(us / US_PER_HOUR) * US_PER_HOUR
export const daysOfUtcMonth = (us: number) => {
  const d = new Date(Math.floor(us / 1000))
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate()
}
/** The charge rule: round(price × servers ÷ (days × 24)) micro-USD, halves away from zero. */
export const expectedHourly = (priceMicros: number, servers: number, days: number) => Math.round((priceMicros * servers) / (days * 24))

/** A tenant on `plan` with its owner signed in. */
export async function payer(app: TestApp, plan: string | null = 'starter', tag = 'payer'): Promise<Member> {
  const m = await newTenant(app, tag)
  await setPlan(app, m.tenantId, plan)
  return m
}

/** `n` enrolled servers of the tenant, enrolled at the service's "now". */
export async function addServers(app: TestApp, tenantId: string, n: number, name = 'rig'): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < n; i++) ids.push(await insertServer(app, tenantId, n === 1 ? name : `${name}-${i + 1}`))
  return ids
}

/** POST /_test/clock {now}: jumps the service's clock to `us` (must lie ahead); answers the new now. */
export async function clockTo(app: TestApp, us: number): Promise<number> {
  const res = await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { now: iso(us) } })
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
  return usOf(JSON.parse(text).now)
}

/** POST /_test/clock {advance_seconds}. */
export async function advanceBy(app: TestApp, seconds: number): Promise<number> {
  const res = await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } })
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
  return usOf(JSON.parse(text).now)
}

export type JobReply = { job: string; now: string; outcome: string; detail: string | null }
/** POST /_test/jobs/billing.charge/run; expects it to succeed. */
export async function runCharges(app: TestApp): Promise<JobReply> {
  const res = await app.fetch('/api/v1/_test/jobs/billing.charge/run', { method: 'POST' })
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
  const body = JSON.parse(text) as JobReply
  expect({ outcome: body.outcome, detail: body.detail }).toMatchObject({ outcome: 'succeeded' })
  return body
}

/** A 2xx JSON answer as `caller`, or a failure that shows the body. */
export async function getJson<T = any>(app: TestApp, caller: Caller, path: string, status = 200): Promise<T> {
  const res = await call(app, 'GET', path, caller)
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status })
  return JSON.parse(text) as T
}

export const getBilling = (app: TestApp, caller: Caller) => getJson<Billing>(app, caller, '/billing')

/** Every ledger row for these filters, following next_cursor to the end (newest first). */
export async function ledgerAll(app: TestApp, caller: Caller, query: Record<string, string> = {}, limit = 200): Promise<LedgerItem[]> {
  const out: LedgerItem[] = []
  let cursor: string | null = null
  for (let pages = 0; pages < 1000; pages++) {
    const qs = new URLSearchParams({ ...query, limit: String(limit), ...(cursor ? { cursor } : {}) })
    const page = await getJson<{ items: LedgerItem[]; next_cursor: string | null }>(app, caller, `/billing/ledger?${qs}`)
    out.push(...page.items)
    cursor = page.next_cursor
    if (!cursor) return out
  }
  throw new Error('ledger pagination did not end')
}

/** PATCH /me {timezone} as the member. */
export async function setZone(app: TestApp, member: Member, timezone: string): Promise<void> {
  const res = await call(app, 'PATCH', '/me', member, { json: { timezone } })
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
}

/**
 * A top-up credit (negative: a reversal), booked through the ledger module as a provider would;
 * effective now unless `at` says when.
 */
export async function topUp(app: TestApp, tenantId: string, amountMicros: number, at?: number) {
  return await withTransaction(app.deps.db, (tx) =>
    appendEntry(tx, app.deps, { tenantId, kind: 'topup', amountMicros, occurredAt: at ?? app.deps.clock.nowUs(), detail: 'top-up (test provider)' }),
  )
}

/** The operator's adjustment verb (what scripts/admin adjust runs), in process. */
export const adjust = (app: TestApp, tenantId: string, amount: string, reason = 'test adjustment') =>
  adjustBalance({ deps: app.deps, input: { tenantId, amount, reason } })

/** The tenant's charge rows straight from the database, by charge hour. */
export async function chargeRowsOf(app: TestApp, tenantId: string): Promise<{ charge_hour: number; amount_micros: number; created_at: number; seq: number }[]> {
  return await app.deps.db.all(
    sql`SELECT charge_hour, amount_micros, created_at, seq FROM ledger_entries WHERE tenant_id = ${tenantId} AND kind = 'charge' ORDER BY charge_hour`,
  )
}

/** (tenant, hour) pairs charged more than once anywhere in the database. */
export async function doubleCharges(app: TestApp): Promise<unknown[]> {
  return await app.deps.db.all(
    sql`SELECT tenant_id, charge_hour, count(*) AS n FROM ledger_entries WHERE kind = 'charge' GROUP BY tenant_id, charge_hour HAVING count(*) > 1`,
  )
}

/** Sum of spend (charges and adjustments) of ledger rows as a tile shows it: minus their sum. */
export const spendOf = (rows: LedgerItem[]) => 0 - rows.filter((r) => r.kind !== 'topup').reduce((s, r) => s + micros(r.amount_usd), 0)

/*
 * An independent oracle for calendar periods in an IANA zone (the tests' own, not src/platform/zoned.ts):
 * the start of a local day is found by binary search for the first instant whose local date is
 * that day, which holds across DST changes of any size, half-hour zones included.
 */
const dateFormatters = new Map<string, Intl.DateTimeFormat>()
function dateFormatter(zone: string) {
  let f = dateFormatters.get(zone)
  if (!f) dateFormatters.set(zone, (f = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' })))
  return f
}
/** The local calendar date of an instant (ms) as YYYY-MM-DD. */
const localDate = (zone: string, ms: number) => dateFormatter(zone).format(new Date(ms))
const shiftDate = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10)
/** The first instant (µs) whose local date in `zone` is `date` (YYYY-MM-DD). */
function localDayStartUs(zone: string, date: string): number {
  const wall = Date.parse(`${date}T00:00:00Z`)
  let lo = wall - 16 * 3_600_000 // certainly before (no zone is ahead of UTC by more than 14 h)
  let hi = wall + 16 * 3_600_000 // certainly on or after
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2)
    if (localDate(zone, mid) >= date) hi = mid
    else lo = mid
  }
  return hi * 1000
}
/** The five billing periods at `nowUs` in `zone`, as [from, to) in µs. */
export function expectedRanges(zone: string, nowUs: number): Record<RangeName, [number, number]> {
  const today = localDate(zone, Math.floor(nowUs / 1000))
  const start = (d: string) => localDayStartUs(zone, d)
  const first = `${today.slice(0, 7)}-01`
  const nextFirst = shiftDate(first, 32).slice(0, 7) + '-01'
  const prevFirst = shiftDate(first, -1).slice(0, 7) + '-01'
  return {
    today: [start(today), start(shiftDate(today, 1))],
    yesterday: [start(shiftDate(today, -1)), start(today)],
    '7d': [start(shiftDate(today, -6)), start(shiftDate(today, 1))],
    month: [start(first), start(nextFirst)],
    prev_month: [start(prevFirst), start(first)],
  }
}
/** UTC offset (minutes) of the zone at an instant (ms). */
function offsetMinutes(zone: string, ms: number): number {
  const p = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    })
      .formatToParts(new Date(ms))
      .filter((x) => x.type !== 'literal')
      .map((x) => [x.type, Number(x.value)]),
  )
  return Math.round((Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!) - Math.floor(ms / 60_000) * 60_000) / 60_000)
}
/** Instants (ms, to the hour) at which the zone's offset changes between `fromMs` and `toMs`. */
export function offsetChanges(zone: string, fromMs: number, toMs: number): number[] {
  const out: number[] = []
  for (let day = fromMs; day < toMs; day += 86_400_000) {
    if (offsetMinutes(zone, day) === offsetMinutes(zone, day + 86_400_000)) continue
    for (let h = day; h < day + 86_400_000; h += 3_600_000) if (offsetMinutes(zone, h) !== offsetMinutes(zone, h + 3_600_000)) out.push(h + 3_600_000)
  }
  return out
}
