import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { toCsv } from '../../platform/csv'
import { marginReport } from '../costs'
import { managedServers } from '../fleet'
import { gpuDays } from './gpu-days.service'
import { periodView, rangeView, type Range } from './range'

/**
 * GET /reports/margin (docs/earnings.md "Margin", docs/reports.md): the costs module's margin over
 * the range's UTC days, and each period computed over its own days. Earned and gpuhq's charges add
 * up across periods to the micro-dollar; the estimated costs (cut, electricity) are rounded per period.
 */
export async function marginReportOf({ deps, actor, range }: { deps: Deps; actor: Actor; range: Range }) {
  // The measured power from the stored daily aggregates, then one computation for the range and
  // every period (a fixed number of reads, docs/reports.md "Cost").
  const ids = (await managedServers(deps.db, actor.tenantId)).map((s) => s.id)
  const power = await gpuDays(deps, actor.tenantId, ids, 'power_w', range.fromUs, Math.min(range.toUs, deps.clock.nowUs()))
  const { periods, ...whole } = await marginReport({ deps, actor, fromDay: range.from, toDay: range.to, periods: range.periods, power })
  return {
    json: () => ({
      report: 'margin' as const,
      ...whole,
      ...rangeView(range),
      periods: range.periods.map((p, i) => ({ ...periodView(p), ...periods[i]!.fleet() })),
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
        range.periods.flatMap((p, i) =>
          periods[i]!.all().servers.map((s) => [
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
