import { formatMoney, parseDecimal } from '../../platform/money'
import { defaultDealCurrency, type MarketplaceId } from '../marketplaces'
import type { EarningsDayRow } from './earnings.repository'
import { formatDecimal } from '../../platform/numbers'

/**
 * One earnings story (docs/earnings.md "Reconciliation"): what the rentals accrued (gross, before
 * the platform's cut), the cut (the rate entered in the cost basis, else the platform's published
 * default, else unknown), what is left (net), and beside it the platform's own figure with the
 * difference, compared only on the rows the platform reported (the same machines and days).
 */

export type CutSource = 'entered' | 'published_default' | 'unknown'
/** The cost basis's rule for a marketplace's deal currency, handed in by the composition root (costs' `platformCuts`). */
export type CutOf = (marketplace: MarketplaceId, currency: string) => { percent: string | null; source: CutSource }
/** The reader of a tenant's cuts (it reads the tenant's cost basis once; the rule it answers is pure). */
export type PlatformCutsOf = (tenantId: string) => Promise<CutOf>

/** `micros` × percent / 100, rounded half up, exactly (the percent is a decimal string). */
function percentOf(micros: number, percent: string): number {
  const p = parseDecimal(percent)
  if (!p) return 0
  const den = 100n * 10n ** BigInt(p.scale)
  return Number((BigInt(micros) * p.units * 2n + den) / (2n * den))
}

/** A percent with up to 4 decimals, no trailing zeros. */
function percentText(n: number): string {
  return formatDecimal(n, 4) ?? '0'
}

export type RowCut = { percent: string | null; source: CutSource; cutMicros: number | null; netMicros: number | null }

/** The cut and net of one row: each currency at its own rate; unknown when any earning currency's rate is (an idle row's cut is 0). */
export function rowCut(r: EarningsDayRow, cutOf: CutOf): RowCut {
  const entries = Object.entries(r.byCurrency).map(([currency, c]) => ({ currency, usd: c.usdMicros }))
  if (entries.length === 0 && r.accruedUsdMicros === 0) {
    // Nothing earned: the cut of nothing is nothing, whatever the rate (shown when known).
    const rate = cutOf(r.marketplace, defaultDealCurrency(r.marketplace))
    return { percent: rate.percent, source: rate.source, cutMicros: 0, netMicros: 0 }
  }
  if (entries.length === 0) entries.push({ currency: defaultDealCurrency(r.marketplace), usd: r.accruedUsdMicros })
  let cutMicros = 0
  const rates = new Set<string>()
  let source: CutSource = 'entered'
  for (const e of entries) {
    const cut = cutOf(r.marketplace, e.currency)
    if (cut.percent === null) return { percent: null, source: 'unknown', cutMicros: null, netMicros: null }
    if (cut.source === 'published_default') source = 'published_default'
    rates.add(cut.percent)
    cutMicros += percentOf(e.usd, cut.percent)
  }
  const percent = rates.size === 1 ? [...rates][0]! : r.accruedUsdMicros > 0 ? percentText((cutMicros / r.accruedUsdMicros) * 100) : null
  return { percent, source, cutMicros, netMicros: r.accruedUsdMicros - cutMicros }
}

type Acc = { gross: number; cut: number; cutKnown: boolean; reportedRows: number; reportedNet: number; reportedNetKnown: boolean; platform: number }
const emptyAcc = (): Acc => ({ gross: 0, cut: 0, cutKnown: true, reportedRows: 0, reportedNet: 0, reportedNetKnown: true, platform: 0 })

function add(acc: Acc, r: EarningsDayRow, cut: RowCut, platformMicros: number | null): void {
  acc.gross += r.accruedUsdMicros
  if (cut.cutMicros === null) acc.cutKnown = false
  else acc.cut += cut.cutMicros
  if (platformMicros === null) return
  acc.reportedRows++
  acc.platform += platformMicros
  if (cut.netMicros === null) acc.reportedNetKnown = false
  else acc.reportedNet += cut.netMicros
}

function recView(marketplace: MarketplaceId | null, acc: Acc, cutRates: { currency: string; percent: string | null; source: CutSource }[]) {
  const reportedNet = acc.reportedNetKnown ? acc.reportedNet : null
  return {
    marketplace,
    gross_usd: formatMoney(acc.gross),
    platform_cut_usd: acc.cutKnown ? formatMoney(acc.cut) : null,
    cut_rates: cutRates,
    net_usd: acc.cutKnown ? formatMoney(acc.gross - acc.cut) : null,
    reported: {
      rows: acc.reportedRows,
      net_usd: reportedNet === null ? null : formatMoney(reportedNet),
      platform_usd: formatMoney(acc.platform),
      difference_usd: reportedNet === null || acc.reportedRows === 0 ? null : formatMoney(acc.platform - reportedNet),
    },
  }
}

/** The words a host reads for each figure of the reconciliation (the console's captions). */
const RECONCILIATION_LABELS = {
  gross_usd: 'Earned by rentals (before the platform’s cut)',
  platform_cut_usd: 'Platform’s cut',
  net_usd: 'Yours after the cut (estimate)',
  'reported.net_usd': 'gpuhq’s estimate for the days the platform reported',
  'reported.platform_usd': 'Reported by the platform',
  'reported.difference_usd': 'Platform’s figure minus gpuhq’s estimate',
  entered: 'your rate (cost basis)',
  published_default: 'the platform’s published rate',
  unknown: 'not known: enter it in the cost basis',
}

/**
 * The reconciliation over the window's rows: in total and per marketplace, gross, cut and net, and
 * beside them the platform-reported figure against gpuhq's net on the same rows.
 */
export function reconcile(
  rows: { row: EarningsDayRow; cut: RowCut; platformMicros: number | null }[],
  cutOf: CutOf,
  currenciesOf: (marketplace: MarketplaceId) => string[],
) {
  const total = emptyAcc()
  const by = new Map<MarketplaceId, Acc>()
  for (const { row, cut, platformMicros } of rows) {
    add(total, row, cut, platformMicros)
    let acc = by.get(row.marketplace)
    if (!acc) by.set(row.marketplace, (acc = emptyAcc()))
    add(acc, row, cut, platformMicros)
  }
  const marketplaces = [...by.keys()].sort()
  return {
    total: recView(null, total, []),
    by_marketplace: marketplaces.map((m) =>
      recView(
        m,
        by.get(m)!,
        currenciesOf(m).map((currency) => ({ currency, ...cutOf(m, currency) })),
      ),
    ),
    labels: RECONCILIATION_LABELS,
  }
}
