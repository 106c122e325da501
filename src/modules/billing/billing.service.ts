import { and, desc, eq, gte, isNull, lt, sql } from 'drizzle-orm'
import { chargeCalculations, ledgerEntries, servers, users } from '../../../db/schema'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { toCsv } from '../../platform/csv'
import { decodeCursor, toPage } from '../../platform/cursor'
import { divideRounded, formatMoney } from '../../platform/money'
import { problems } from '../../platform/problem'
import { daysInMonth, formatNullableTimestamp, formatTimestamp, parseDay, parseTimestamp, US_PER_DAY, US_PER_HOUR, utcDay } from '../../platform/time'
import { rangeBounds, type BillingRange } from '../../platform/zoned'
import { findPlan } from '../plans/plans.repository'
import { findTenant } from '../tenants/tenants.repository'
import { balanceOf, ledgerView, listLedger, spendBetween, type LedgerRow } from './ledger'

/** The zone the tiles and ranges are computed in: the member's own, else the owner's, else UTC. */
export function tenantZone(deps: Deps, actor: Actor): string {
  const row = actor.userId ? deps.db.select({ tz: users.timezone }).from(users).where(eq(users.id, actor.userId)).get() : undefined
  if (row) return row.tz
  const owner = deps.db
    .select({ tz: users.timezone })
    .from(users)
    .where(and(eq(users.tenantId, actor.tenantId), eq(users.role, 'owner')))
    .get()
  return owner?.tz ?? 'UTC'
}

export function managedServerCount(deps: Deps, tenantId: string): number {
  const r = deps.db
    .select({ n: sql<number>`count(*)` })
    .from(servers)
    .where(and(eq(servers.tenantId, tenantId), isNull(servers.decommissionedAt)))
    .get()
  return Number(r?.n ?? 0)
}

export function getBilling({ deps, actor }: { deps: Deps; actor: Actor }) {
  const tenant = findTenant(deps.db, actor.tenantId)!
  const plan = tenant.planCode ? findPlan(deps.db, tenant.planCode) : undefined
  const now = deps.clock.nowUs()
  const balance = balanceOf(deps.db, actor.tenantId)
  const managed = managedServerCount(deps, actor.tenantId)
  const d = new Date(now / 1000)
  const days = daysInMonth(d.getUTCFullYear(), d.getUTCMonth() + 1)
  const price = plan?.priceMicrosPerServerMonth ?? null
  const perDay = price === null ? null : divideRounded(price * managed, days)
  const perMonth = price === null ? null : price * managed
  const tz = tenantZone(deps, actor)
  const tile = (r: BillingRange) => {
    const { from, to } = rangeBounds(r, tz, now)
    return { spend_usd: formatMoney(spendBetween(deps.db, actor.tenantId, from, to)), from: formatTimestamp(from), to: formatTimestamp(to) }
  }
  const tiles = { today: tile('today'), yesterday: tile('yesterday'), '7d': tile('7d'), month: tile('month'), prev_month: tile('prev_month') }
  return {
    balance_usd: formatMoney(balance),
    account_state: tenant.accountState,
    grace_since: formatNullableTimestamp(tenant.graceSince),
    grace_ends_at: tenant.graceSince === null ? null : formatTimestamp(tenant.graceSince + deps.config.gracePeriodHours * US_PER_HOUR),
    frozen_at: formatNullableTimestamp(tenant.frozenAt),
    tariff: {
      plan: tenant.planCode,
      label: plan?.label ?? null,
      monthly_price_per_server_usd: price === null ? null : formatMoney(price),
      contract_priced: plan !== undefined && price === null,
      servers_max: plan?.serversMax ?? null,
    },
    estimate: {
      managed_servers: managed,
      per_day_usd: perDay === null ? null : formatMoney(perDay),
      per_month_usd: perMonth === null ? null : formatMoney(perMonth),
      days_in_month: days,
    },
    days_left: perDay === null || perDay === 0 ? null : Math.max(0, Math.floor(balance / perDay)),
    timezone: tz,
    tiles,
  }
}

export type LedgerQuery = { cursor?: string; limit?: number; kind?: LedgerRow['kind']; range?: BillingRange; from?: string; to?: string }

export function ledgerPage({ deps, actor, input }: { deps: Deps; actor: Actor; input: LedgerQuery }) {
  if (input.range && (input.from !== undefined || input.to !== undefined))
    throw problems.validation([{ path: '/range', code: 'exclusive_with_from_to' }], 'range cannot be combined with from or to')
  let fromUs: number | undefined
  let toUs: number | undefined
  if (input.range) ({ from: fromUs, to: toUs } = rangeBounds(input.range, tenantZone(deps, actor), deps.clock.nowUs()))
  else {
    if (input.from !== undefined) fromUs = parseTimestamp(input.from) ?? badTime('/from')
    if (input.to !== undefined) toUs = parseTimestamp(input.to) ?? badTime('/to')
  }
  const limit = input.limit ?? 50
  const filter = { kind: input.kind, fromUs, toUs }
  const scope = `ledger:${actor.tenantId}:${JSON.stringify(filter)}`
  const before = input.cursor ? decodeCursor<{ occurredAt: number; id: string }>(deps.keys.cursor, scope, input.cursor) : null
  const rows = listLedger(deps.db, actor.tenantId, { ...filter, before }, limit + 1)
  return toPage(rows, limit, (r) => ({ occurredAt: r.occurredAt, id: r.id }), { key: deps.keys.cursor, scope }, ledgerView)
}

function badTime(path: string): never {
  throw problems.field(path, 'format', `${path.slice(1)} must be an RFC 3339 timestamp`)
}

/** The daily journal: one row per UTC day with charges, newest first. */
export function chargeDays({ deps, actor, input }: { deps: Deps; actor: Actor; input: { cursor?: string; limit?: number } }) {
  const limit = input.limit ?? 50
  const scope = `charge-days:${actor.tenantId}`
  const before = input.cursor ? decodeCursor<{ day: string }>(deps.keys.cursor, scope, input.cursor).day : null
  const where = [eq(ledgerEntries.tenantId, actor.tenantId), eq(ledgerEntries.kind, 'charge')]
  if (before) where.push(lt(ledgerEntries.chargeDay, before))
  const rows = deps.db
    .select({
      day: ledgerEntries.chargeDay,
      amount: sql<number>`sum(${ledgerEntries.amountMicros})`,
      hours: sql<number>`count(*)`,
      serverHours: sql<number>`sum(${chargeCalculations.servers})`,
    })
    .from(ledgerEntries)
    .innerJoin(chargeCalculations, eq(chargeCalculations.id, ledgerEntries.calculationId))
    .where(and(...where))
    .groupBy(ledgerEntries.chargeDay)
    .orderBy(desc(ledgerEntries.chargeDay))
    .limit(limit + 1)
    .all()
  return toPage(
    rows,
    limit,
    (r) => ({ day: r.day }),
    { key: deps.keys.cursor, scope },
    (r) => ({
      day: r.day!,
      amount_usd: formatMoney(-Number(r.amount)),
      hours: Number(r.hours),
      server_hours: Number(r.serverHours),
      csv: `/api/v1/billing/charges/${r.day}.csv`,
    }),
  )
}

/**
 * One UTC day's charges per server as CSV. Each hour's booked amount is split over the servers of
 * that hour (equal shares, the remainder micro-dollars to the first servers by id), so the server
 * rows of a day add up exactly to the day's ledger charges.
 */
export function chargesCsv({ deps, actor, day }: { deps: Deps; actor: Actor; day: string }): string {
  const start = parseDay(day)
  if (start === null) throw problems.notFound('no such day')
  const calcs = deps.db
    .select()
    .from(chargeCalculations)
    .where(
      and(eq(chargeCalculations.tenantId, actor.tenantId), gte(chargeCalculations.chargeHour, start), lt(chargeCalculations.chargeHour, start + US_PER_DAY)),
    )
    .all()
  const per = new Map<string, { hours: number; micros: number }>()
  for (const c of calcs) {
    const ids = JSON.parse(c.serverIds) as string[]
    const base = Math.floor(c.amountMicros / ids.length)
    let rest = c.amountMicros - base * ids.length
    for (const id of ids) {
      const row = per.get(id) ?? { hours: 0, micros: 0 }
      row.hours++
      row.micros += base + (rest > 0 ? 1 : 0)
      if (rest > 0) rest--
      per.set(id, row)
    }
  }
  const names = new Map(
    deps.db
      .select({ id: servers.id, name: servers.name })
      .from(servers)
      .where(eq(servers.tenantId, actor.tenantId))
      .all()
      .map((s) => [s.id, s.name]),
  )
  const rows = [...per].sort(([a], [b]) => a.localeCompare(b)).map(([id, r]) => [day, id, names.get(id) ?? '', r.hours, formatMoney(r.micros)])
  return toCsv(['day', 'server_id', 'server_name', 'hours', 'amount_usd'], rows)
}

export { utcDay }
