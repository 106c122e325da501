import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { responses } from '../../platform/schemas'
import { Earnings, EarningsQuery } from './earnings.model'
import { listEarnings } from './earnings.service'
import type { PlatformCutsOf } from './reconcile'

/** What the machines earn (docs/earnings.md). `cutsOf` is the cost basis's rule for the platforms' cuts (the costs module's), handed in by the root. */
export function earningsRoutes(deps: Deps, cutsOf: PlatformCutsOf) {
  return apiRoutes('earnings', deps).get('/marketplaces/earnings', ({ verb, query }) => listEarnings({ ...verb, days: query.days ?? 7, cutsOf }), {
    query: EarningsQuery,
    response: responses({ 200: Earnings }, [401, 403, 422]),
    detail: describe(
      { role: 'viewer', scope: 'marketplaces:read', reach: 'server' },
      {
        tags: ['marketplaces'],
        summary: 'Earnings per machine, marketplace and UTC day',
        description:
          "`days` 1..90 (default 7, inclusive of today), at most 8192 rows, newest day first. `earn_usd_accrued` is gpuhq's own count (running deals' price × time, before the platform's cut, sampled every 5 minutes by earnings.sample); `earn_usd_day` is the platform's own figure after its cut (marketplace_a's machine-earnings; null when it said nothing, always null on marketplace_b). These are the marketplace's numbers, not a ledger: any total built from them must carry `total_label`. Each row also gives the platform's cut gpuhq applies (`platform_cut_percent` and its `platform_cut_source`: the rate entered in the cost basis, else the platform's published default, else unknown), `earn_usd_net` and `reported_difference_usd` (the platform's figure minus that net); `reconciliation` sums them over the window in total and per marketplace and compares the platform's figure with gpuhq's net only on the rows the platform reported (docs/earnings.md \"Reconciliation\"). A token sees its allowlisted servers' rows.",
      },
    ),
  })
}
