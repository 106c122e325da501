import type { Static } from '@sinclair/typebox'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { toCsv } from '../../platform/csv'
import { paginate } from '../../platform/cursor'
import { divideRounded, formatMoney } from '../../platform/money'
import { daysInMonth, formatNullableTimestamp, formatTimestamp, parseDay, parseTimestamp, US_PER_DAY, US_PER_HOUR } from '../../platform/time'
import { rangeBounds, type BillingRange } from '../../platform/zoned'
import { findPlan } from '../plans'
import { findTenant } from '../tenants'
import { countManagedServers, serverNames } from '../fleet'
import { BillingErrors, invalidBillingField } from './billing.errors'
import type { ChargeDaysQuery, LedgerQuery } from './billing.model'
import { ledgerView } from './ledger'
import { splitCharge } from './split'
import { balanceOf, chargeCalculationsBetween, chargeDayRows, listLedger, spendBetween, type LedgerPosition } from './ledger.repository'
import { memberTimezone } from '../users'

/** The zone the tiles and ranges are computed in: the member's own, else the owner's, else UTC. */
async function tenantZone(deps: Deps, actor: Actor): Promise<string> {
  return (await memberTimezone(deps.db, actor.tenantId, actor.userId)) ?? 'UTC'
}

/**
 * The tenant's charge at its current fleet and plan: the monthly price per server (null without a
 * plan or on a contract price), spread over this UTC month's days as the hourly charges are.
 */
async function chargeRate(deps: Deps, tenantId: string, now: number) {
  const tenant = (await findTenant(deps.db, tenantId))!
  const plan = tenant.planCode ? await findPlan(deps.db, tenant.planCode) : undefined
  const managed = await countManagedServers(deps.db, tenantId)
  const d = new Date(now / 1000)
  const days = daysInMonth(d.getUTCFullYear(), d.getUTCMonth() + 1)
  const price = plan?.priceMicrosPerServerMonth ?? null
  const perDay = price === null ? null : divideRounded(price * managed, days)
  const perMonth = price === null ? null : price * managed
  return { tenant, plan, managed, days, price, perDay, perMonth }
}

/**
 * The balance and how long it lasts at the current charge (GET /billing's days_left, to the
 * second): whole seconds, 0 once the balance is not above zero, null when nothing is charged.
 * Computed in integers (BigInt: micro-USD times 86,400 passes 2^53).
 */
export async function balanceRunway(deps: Deps, tenantId: string): Promise<{ balanceMicros: number; perDayMicros: number | null; secondsLeft: number | null }> {
  const balance = await balanceOf(deps.db, tenantId)
  const { perDay } = await chargeRate(deps, tenantId, deps.clock.nowUs())
  const secondsLeft = perDay === null || perDay === 0 ? null : balance <= 0 ? 0 : Number((BigInt(balance) * 86_400n) / BigInt(perDay))
  return { balanceMicros: balance, perDayMicros: perDay, secondsLeft }
}

export async function getBilling({ deps, actor }: { deps: Deps; actor: Actor }) {
  const now = deps.clock.nowUs()
  const { tenant, plan, managed, days, price, perDay, perMonth } = await chargeRate(deps, actor.tenantId, now)
  const balance = await balanceOf(deps.db, actor.tenantId)
  const tz = await tenantZone(deps, actor)
  const tile = async (r: BillingRange) => {
    const { from, to } = rangeBounds(r, tz, now)
    return { spend_usd: formatMoney(await spendBetween(deps.db, actor.tenantId, from, to)), from: formatTimestamp(from), to: formatTimestamp(to) }
  }
  const tiles = {
    today: await tile('today'),
    yesterday: await tile('yesterday'),
    '7d': await tile('7d'),
    month: await tile('month'),
    prev_month: await tile('prev_month'),
  }
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

export async function ledgerPage({ deps, actor, input }: { deps: Deps; actor: Actor; input: Static<typeof LedgerQuery> }) {
  if (input.range && (input.from !== undefined || input.to !== undefined))
    throw invalidBillingField('/range', 'exclusive_with_from_to', 'range cannot be combined with from or to')
  let fromUs: number | undefined
  let toUs: number | undefined
  if (input.range) ({ from: fromUs, to: toUs } = rangeBounds(input.range, await tenantZone(deps, actor), deps.clock.nowUs()))
  else {
    if (input.from !== undefined) fromUs = parseTimestamp(input.from) ?? badTime('/from')
    if (input.to !== undefined) toUs = parseTimestamp(input.to) ?? badTime('/to')
  }
  const filter = { kind: input.kind, fromUs, toUs }
  return await paginate(deps.keys.cursor, {
    scope: `ledger:${actor.tenantId}:${JSON.stringify(filter)}`,
    input,
    fetch: (after: LedgerPosition | undefined, take) => listLedger(deps.db, actor.tenantId, filter, after, take),
    position: (r) => ({ occurredAt: r.occurredAt, id: r.id }),
    view: ledgerView,
  })
}

function badTime(path: string): never {
  throw invalidBillingField(path, 'format', `${path.slice(1)} must be an RFC 3339 timestamp`)
}

/** The daily journal: one row per UTC day with charges, newest first. */
export async function chargeDays({ deps, actor, input }: { deps: Deps; actor: Actor; input: Static<typeof ChargeDaysQuery> }) {
  return await paginate(deps.keys.cursor, {
    scope: `charge-days:${actor.tenantId}`,
    input,
    fetch: (after: { day: string } | undefined, take) => chargeDayRows(deps.db, actor.tenantId, after?.day, take),
    position: (r) => ({ day: r.day! }),
    view: (r) => ({
      day: r.day!,
      amount_usd: formatMoney(-Number(r.amount)),
      hours: Number(r.hours),
      server_hours: Number(r.serverHours),
      csv: `/api/v1/billing/charges/${r.day}.csv`,
    }),
  })
}

/**
 * One UTC day's charges per server as CSV. Each hour's booked amount is split over the servers of
 * that hour (equal shares, the remainder micro-dollars to the first servers by id), so the server
 * rows of a day add up exactly to the day's ledger charges.
 */
export async function chargesCsv({ deps, actor, day }: { deps: Deps; actor: Actor; day: string }): Promise<string> {
  const start = parseDay(day)
  if (start === null) throw BillingErrors.dayNotFound()
  const per = new Map<string, { hours: number; micros: number }>()
  for (const c of await chargeCalculationsBetween(deps.db, actor.tenantId, start, start + US_PER_DAY)) {
    for (const [id, micros] of splitCharge(c.amountMicros, c.serverIds)) {
      const row = per.get(id) ?? { hours: 0, micros: 0 }
      row.hours++
      row.micros += micros
      per.set(id, row)
    }
  }
  const names = await serverNames(deps.db, actor.tenantId)
  const rows = [...per].sort(([a], [b]) => a.localeCompare(b)).map(([id, r]) => [day, id, names.get(id) ?? '', r.hours, formatMoney(r.micros)])
  return toCsv(['day', 'server_id', 'server_name', 'hours', 'amount_usd'], rows)
}
