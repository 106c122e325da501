import type { DbOrTx } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { divideRounded, formatMoney } from '../../platform/money'
import { daysInMonth, formatTimestamp, parseDay, US_PER_DAY, utcDay } from '../../platform/time'
import { balanceOf } from '../billing'
import { findPlan, type PlanRow } from '../plans'
import { findTenant, type TenantRow } from '../tenants'
import { countManagedServers } from '../fleet'
import { SubscriptionErrors } from './subscription.errors'
import type { ChangeRow } from './subscription.repository'

/**
 * The plan-change rule (docs/subscription.md). Direction comes from effective prices only: a
 * contract-priced plan (no list price) ranks above every listed one. Only an upgrade is gated: one
 * day of the target plan at the current fleet (the reserve) against the balance. An upgrade bills
 * from today (or tomorrow by the target's policy); a downgrade from the first UTC day of next month
 * (or tomorrow by the target's policy); a lateral change from today.
 */
export type Quote = {
  current: PlanRow
  target: PlanRow
  direction: ChangeRow['direction']
  managed: number
  unitDaily: number | null
  reserve: number
  balance: number
  covered: boolean
  billingDay: string
}

function rank(price: number | null): number {
  return price === null ? Number.POSITIVE_INFINITY : price
}

function directionOf(current: PlanRow, target: PlanRow): ChangeRow['direction'] {
  const a = rank(current.priceMicrosPerServerMonth)
  const b = rank(target.priceMicrosPerServerMonth)
  return b > a ? 'upgrade' : b < a ? 'downgrade' : 'lateral'
}

function nextDay(day: string): string {
  return utcDay(parseDay(day)! + US_PER_DAY)
}

function firstOfNextMonth(nowUs: number): string {
  const d = new Date(nowUs / 1000)
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString().slice(0, 10)
}

export async function computeQuote(db: DbOrTx, tenant: TenantRow, targetCode: string, now: number): Promise<Quote> {
  if (!tenant.planCode) throw SubscriptionErrors.planRequired()
  const target = await findPlan(db, targetCode)
  if (!target) throw SubscriptionErrors.planNotFound(`no plan ${targetCode}`)
  if (target.priceMicrosPerServerMonth === null) throw SubscriptionErrors.contractPriced(`${target.label} is contract-priced; ask us for an offer`)
  const current = await findPlan(db, tenant.planCode)
  if (!current) throw SubscriptionErrors.planRequired("the tenant's plan is no longer in the catalogue")
  const direction = directionOf(current, target)
  const managed = await countManagedServers(db, tenant.id)
  const d = new Date(now / 1000)
  const unitDaily = divideRounded(target.priceMicrosPerServerMonth, daysInMonth(d.getUTCFullYear(), d.getUTCMonth() + 1))
  const reserve = direction === 'upgrade' ? unitDaily * managed : 0
  const balance = await balanceOf(db, tenant.id)
  const today = utcDay(now)
  const billingDay =
    direction === 'upgrade'
      ? target.upgradeEffective === 'next_day'
        ? nextDay(today)
        : today
      : direction === 'downgrade'
        ? target.downgradeEffective === 'next_day'
          ? nextDay(today)
          : firstOfNextMonth(now)
        : today
  return { current, target, direction, managed, unitDaily, reserve, balance, covered: direction !== 'upgrade' || balance >= reserve, billingDay }
}

export async function quote({ deps, actor, plan }: { deps: Deps; actor: Actor; plan: string }) {
  const tenant = (await findTenant(deps.db, actor.tenantId))!
  const now = deps.clock.nowUs()
  const q = await computeQuote(deps.db, tenant, plan, now)
  return {
    target_plan: q.target.code,
    current_plan: q.current.code,
    direction: q.direction,
    managed_servers: q.managed,
    monthly_price_per_server_usd: formatMoney(q.target.priceMicrosPerServerMonth!),
    unit_daily_rate_usd: q.unitDaily === null ? null : formatMoney(q.unitDaily),
    required_reserve_usd: formatMoney(q.reserve),
    balance_usd: formatMoney(q.balance),
    covered: q.covered,
    server_limit: q.target.serversMax,
    billing_effective_day: q.billingDay,
    quoted_at: formatTimestamp(now),
  }
}
