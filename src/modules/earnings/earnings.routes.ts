import { Elysia } from 'elysia'
import { actorOf, describe } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { responses } from '../../platform/schemas'
import { Earnings, EarningsQuery } from './earnings.model'
import { listEarnings } from './earnings.service'

/** What the machines earn (docs/earnings.md). */
export function earningsRoutes(deps: Deps) {
  return new Elysia({ name: 'earnings', prefix: '/api/v1' }).get(
    '/marketplaces/earnings',
    ({ request, query }) => listEarnings({ deps, actor: actorOf(request), days: query.days ?? 7 }),
    {
      query: EarningsQuery,
      response: responses({ 200: Earnings }, [401, 403, 422]),
      detail: describe(
        { role: 'viewer', scope: 'marketplaces:read', reach: 'server' },
        {
          tags: ['marketplaces'],
          summary: 'Earnings per machine, marketplace and UTC day',
          description:
            "`days` 1..90 (default 7, inclusive of today), at most 8192 rows, newest day first. `earn_usd_accrued` is gpuhq's own count (running deals' price × time, before the platform's cut, sampled every 5 minutes by earnings.sample); `earn_usd_day` is the platform's own figure after its cut (marketplace_a's machine-earnings; null when it said nothing, always null on marketplace_b). These are the marketplace's numbers, not a ledger: any total built from them must carry `total_label`. A token sees its allowlisted servers' rows.",
        },
      ),
    },
  )
}
