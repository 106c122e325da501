import type { DbOrTx } from '../../../db/client'
import { mayAccessServer, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { formatMoney } from '../../platform/money'
import { formatNullableTimestamp, utcDay } from '../../platform/time'
import { currentRates } from '../marketplaces'
import { formatAmount } from './accrual'
import { daysBetween, daysOf, type EarningsDayRow, firstDays } from './earnings.repository'

/** GET /marketplaces/earnings (docs/earnings.md "Reading earnings"). */

const DAY_US = 86_400_000_000
const MAX_ROWS = 8192
const TOTAL_LABEL = "Estimate from marketplace data: the marketplaces' own numbers and gpuhq's accrual from them, not a ledger"

function rowView(r: EarningsDayRow) {
  return {
    day: r.day,
    server_id: r.serverId,
    marketplace: r.marketplace,
    earn_usd_day: r.marketplace === 'marketplace_b' || r.platformUsdMicros === null ? null : formatMoney(r.platformUsdMicros),
    earn_usd_accrued: formatMoney(r.accruedUsdMicros),
    accrued_seconds: Math.floor(r.accruedUs / 1_000_000),
    accrual_gap_seconds: Math.floor(r.gapUs / 1_000_000),
    samples: Math.max(1, r.samples),
    by_currency: Object.entries(r.byCurrency)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([currency, c]) => ({ currency, amount: formatAmount(BigInt(c.amount12)), usd: formatMoney(c.usdMicros) })),
  }
}

export function listEarnings({ deps, actor, days }: { deps: Deps; actor: Actor; days: number }) {
  const now = deps.clock.nowUs()
  const fromDay = utcDay(now - (days - 1) * DAY_US)
  const rows = daysOf(deps.db, actor.tenantId, fromDay, MAX_ROWS * 2).filter((r) => mayAccessServer(actor, r.serverId))
  const first = firstDays(deps.db, actor.tenantId)
  return {
    days,
    items: rows.slice(0, MAX_ROWS).map(rowView),
    collected_since: first.collected,
    accrued_since: first.accrued,
    current_rates: currentRates(deps.db, actor.tenantId).map((r) => ({
      marketplace: r.marketplace,
      currency: r.currency,
      usd_per_coin: r.usdPerCoin,
      observed_at: formatNullableTimestamp(r.observedAt),
    })),
    total_label: TOTAL_LABEL,
  }
}

/** One accrued row for other modules (cost basis, margin): micro-dollars before the platform's cut, per currency. */
export type AccruedDay = {
  serverId: string
  marketplace: 'marketplace_a' | 'marketplace_b'
  day: string
  accruedUsdMicros: number
  accruedUs: number
  gapUs: number
  /** The platform's own figure after its cut (earn_usd_day): null when it said nothing, always on marketplace_b. */
  platformUsdMicros: number | null
  byCurrencyUsdMicros: Record<string, number>
}

/** The tenant's earnings rows for days in [fromDay, toDay]. */
export function accruedDays(deps: Deps, tenantId: string, fromDay: string, toDay: string): AccruedDay[] {
  return daysBetween(deps.db, tenantId, fromDay, toDay).map((r) => ({
    serverId: r.serverId,
    marketplace: r.marketplace,
    day: r.day,
    accruedUsdMicros: r.accruedUsdMicros,
    accruedUs: r.accruedUs,
    gapUs: r.gapUs,
    platformUsdMicros: r.marketplace === 'marketplace_b' ? null : r.platformUsdMicros,
    byCurrencyUsdMicros: Object.fromEntries(Object.entries(r.byCurrency).map(([c, v]) => [c, v.usdMicros])),
  }))
}

/**
 * What each server of the tenant accrued on one UTC day, summed over its marketplaces (micro-USD,
 * before the platform's cut): the figure of its fleet row's `revenue_today_usd`, read in the
 * caller's transaction.
 */
export function accruedByServerOn(db: DbOrTx, tenantId: string, day: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const r of daysBetween(db, tenantId, day, day)) out.set(r.serverId, (out.get(r.serverId) ?? 0) + r.accruedUsdMicros)
  return out
}
