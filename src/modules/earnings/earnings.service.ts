import type { DbOrTx } from '../../../db/client'
import { mayAccessServer, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { formatMoney } from '../../platform/money'
import { formatNullableTimestamp, utcDay } from '../../platform/time'
import { currentRates, type MarketplaceId } from '../marketplaces'
import { formatAmount } from './accrual'
import { daysBetween, daysOf, type EarningsDayRow, firstDays } from './earnings.repository'
import { type CutOf, type PlatformCutsOf, reconcile, rowCut } from './reconcile'

/** GET /marketplaces/earnings (docs/earnings.md "Reading earnings"). */

const DAY_US = 86_400_000_000
const MAX_ROWS = 8192
const TOTAL_LABEL = "Estimate from marketplace data: the marketplaces' own numbers and gpuhq's accrual from them, not a ledger"

/** The platform's own figure after its cut (earn_usd_day): none on marketplace_b. */
const platformOf = (r: EarningsDayRow) => (r.marketplace === 'marketplace_b' ? null : r.platformUsdMicros)

function rowView(r: EarningsDayRow, cutOf: CutOf) {
  const cut = rowCut(r, cutOf)
  const platform = platformOf(r)
  return {
    day: r.day,
    server_id: r.serverId,
    marketplace: r.marketplace,
    earn_usd_day: platform === null ? null : formatMoney(platform),
    earn_usd_accrued: formatMoney(r.accruedUsdMicros),
    accrued_seconds: Math.floor(r.accruedUs / 1_000_000),
    accrual_gap_seconds: Math.floor(r.gapUs / 1_000_000),
    samples: Math.max(1, r.samples),
    by_currency: Object.entries(r.byCurrency)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([currency, c]) => ({ currency, amount: formatAmount(BigInt(c.amount12)), usd: formatMoney(c.usdMicros) })),
    platform_cut_percent: cut.percent,
    platform_cut_source: cut.source,
    platform_cut_usd: cut.cutMicros === null ? null : formatMoney(cut.cutMicros),
    earn_usd_net: cut.netMicros === null ? null : formatMoney(cut.netMicros),
    reported_difference_usd: platform === null || cut.netMicros === null ? null : formatMoney(platform - cut.netMicros),
  }
}

/** The deal currencies a marketplace's rows of the window show (marketplace_a's dollar always). */
function currenciesOf(rows: EarningsDayRow[]) {
  return (marketplace: EarningsDayRow['marketplace']) => {
    const seen = new Set<string>(marketplace === 'marketplace_a' ? ['USD'] : [])
    for (const r of rows) if (r.marketplace === marketplace) for (const c of Object.keys(r.byCurrency)) seen.add(c)
    return [...seen].sort()
  }
}

export async function listEarnings({ deps, actor, days, cutsOf }: { deps: Deps; actor: Actor; days: number; cutsOf: PlatformCutsOf }) {
  const now = deps.clock.nowUs()
  const fromDay = utcDay(now - (days - 1) * DAY_US)
  const rows = (await daysOf(deps.db, actor.tenantId, fromDay, MAX_ROWS * 2)).filter((r) => mayAccessServer(actor, r.serverId)).slice(0, MAX_ROWS)
  const first = await firstDays(deps.db, actor.tenantId)
  const cutOf = await cutsOf(actor.tenantId)
  const rates = await currentRates(deps.db, actor.tenantId)
  return {
    days,
    items: rows.map((r) => rowView(r, cutOf)),
    collected_since: first.collected,
    accrued_since: first.accrued,
    current_rates: rates.map((r) => ({
      marketplace: r.marketplace,
      currency: r.currency,
      usd_per_coin: r.usdPerCoin,
      observed_at: formatNullableTimestamp(r.observedAt),
    })),
    total_label: TOTAL_LABEL,
    reconciliation: reconcile(
      rows.map((row) => ({ row, cut: rowCut(row, cutOf), platformMicros: platformOf(row) })),
      cutOf,
      currenciesOf(rows),
    ),
  }
}

/** One accrued row for other modules (cost basis, margin): micro-dollars before the platform's cut, per currency. */
export type AccruedDay = {
  serverId: string
  marketplace: MarketplaceId
  day: string
  accruedUsdMicros: number
  accruedUs: number
  gapUs: number
  /** The platform's own figure after its cut (earn_usd_day): null when it said nothing, always on marketplace_b. */
  platformUsdMicros: number | null
  byCurrencyUsdMicros: Record<string, number>
}

/** The tenant's earnings rows for days in [fromDay, toDay]. */
export async function accruedDays(deps: Deps, tenantId: string, fromDay: string, toDay: string): Promise<AccruedDay[]> {
  return (await daysBetween(deps.db, tenantId, fromDay, toDay)).map((r) => ({
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
export async function accruedByServerOn(db: DbOrTx, tenantId: string, day: string): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  for (const r of await daysBetween(db, tenantId, day, day)) out.set(r.serverId, (out.get(r.serverId) ?? 0) + r.accruedUsdMicros)
  return out
}

/** One row of payout reconciliation (docs/marketplaces.md "Payouts reconciled"): accrual, the cut that explains the platform's lower figure, and the platform's figure. */
export type CutDay = AccruedDay & {
  /** The cut's rate (the effective one across currencies), where it comes from, and its amount and net (null: unknown). */
  cutPercent: string | null
  cutSource: 'entered' | 'published_default' | 'unknown'
  cutMicros: number | null
  netMicros: number | null
}

/** The tenant's earnings rows for days in [fromDay, toDay] with the platform's cut applied by the cost basis's rule (`cutsOf`, costs' platformCuts). */
export async function cutDays(deps: Deps, tenantId: string, fromDay: string, toDay: string, cutsOf: PlatformCutsOf): Promise<CutDay[]> {
  const cutOf = await cutsOf(tenantId)
  return (await daysBetween(deps.db, tenantId, fromDay, toDay)).map((r) => {
    const cut = rowCut(r, cutOf)
    return {
      serverId: r.serverId,
      marketplace: r.marketplace,
      day: r.day,
      accruedUsdMicros: r.accruedUsdMicros,
      accruedUs: r.accruedUs,
      gapUs: r.gapUs,
      platformUsdMicros: r.marketplace === 'marketplace_b' ? null : r.platformUsdMicros,
      byCurrencyUsdMicros: Object.fromEntries(Object.entries(r.byCurrency).map(([c, v]) => [c, v.usdMicros])),
      cutPercent: cut.percent,
      cutSource: cut.source,
      cutMicros: cut.cutMicros,
      netMicros: cut.netMicros,
    }
  })
}
