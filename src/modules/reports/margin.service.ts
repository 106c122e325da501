import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { toCsv } from '../../platform/csv'
import { marginReport } from '../costs'
import { periodView, rangeView, type Range } from './range'

/**
 * GET /reports/margin (docs/earnings.md "Margin", docs/reports.md): the costs module's margin over
 * the range's UTC days, and each period computed over its own days. Earned and gpuhq's charges add
 * up across periods to the micro-dollar; the estimated costs (cut, electricity) are rounded per period.
 */
export function marginReportOf({ deps, actor, range }: { deps: Deps; actor: Actor; range: Range }) {
  // One computation for the range and every period (a fixed number of reads, docs/reports.md "Cost").
  const { periods, ...whole } = marginReport({ deps, actor, fromDay: range.from, toDay: range.to, periods: range.periods })
  const perPeriod = () => range.periods.map((p, i) => ({ p, r: periods[i]! }))
  return {
    json: () => ({
      report: 'margin' as const,
      ...whole,
      ...rangeView(range),
      periods: perPeriod().map(({ p, r }) => ({ ...periodView(p), ...r.fleet })),
    }),
    csv: () =>
      toCsv(
        [
          'period',
          'period_from',
          'period_to',
          'server_id',
          'server_name',
          'gpu_model',
          'earned_usd',
          'platform_cut_usd',
          'electricity_usd',
          'gpuhq_charges_usd',
          'margin_usd',
          'estimate',
          'missing',
        ],
        perPeriod().flatMap(({ p, r }) =>
          r.servers.map((s) => [
            p.period,
            p.from,
            p.to,
            s.server_id,
            s.name,
            s.gpu_model,
            s.earned_usd,
            s.platform_cut_usd,
            s.electricity_usd,
            s.gpuhq_charges_usd,
            s.margin_usd,
            String(s.estimate),
            s.missing.join('; '),
          ]),
        ),
      ),
  }
}
