import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { idempotent } from '../../platform/idempotency'
import { responses } from '../../platform/schemas'
import { Reconciliation, ReconciliationQuery, Settings, SettingsPut } from './reconciliation.model'
import { getSettings, listReconciliation, putSettings } from './reconciliation.service'

const tags = ['reconciliation']
// Commission and payouts are the tenant's money: read as billing is, and tenant-wide (a token limited to servers is refused).
const read = { role: 'viewer', scope: 'billing:read', reach: 'tenant' } as const
const write = { role: 'admin', scope: 'billing:write', reach: 'tenant' } as const

/** Payouts reconciled (docs/marketplaces.md "Payouts reconciled"). */
export function reconciliationRoutes(deps: Deps) {
  return apiRoutes('reconciliation', deps)
    .get('/reconciliation', ({ verb, query }) => listReconciliation({ ...verb, input: query }), {
      query: ReconciliationQuery,
      response: responses({ 200: Reconciliation }, [401, 403, 422]),
      detail: describe(read, {
        tags,
        summary: "Per UTC day and machine: gpuhq's accrual beside the platform's figure, the commission that explains the difference, and the unexplained gap",
        description:
          "`from`/`to` UTC days, both included (default the last 7 days, today included; at most 90), or `days` (the last 1..90 days, today included; not with from/to): 422 with a pointer (`/from` after_to or range_too_large, `format`). `marketplace` filters. Rows newest day first (then marketplace, server), paginated with `cursor`/`limit`. Each row: `accrued_usd` (rented hours × price, before the platform's cut), `commission_usd` at the cost basis's rate (`commission_source`: entered, published_default, unknown), `expected_usd` = accrual − commission, `platform_usd` (marketplace_a's machine-earnings, after its cut; null on marketplace_b, which has no earnings report), `difference_usd` = platform − accrual, `unexplained_usd` = platform − expected, and `flagged` when the day is closed and the platform paid less than expected by more than `gap_threshold_usd`. `totals` cover the whole window; `payouts` (marketplace_a's invoice / payout history) and `wallets` (marketplace_b's wallet balances per coin and day) are account-wide. Money as decimal strings; an estimate from marketplace data (`total_label`), not a ledger.",
      }),
    })
    .get(
      '/reconciliation/settings',
      async ({ verb, set }) => {
        const out = await getSettings(verb)
        set.headers.etag = out.etag
        return out.body
      },
      {
        response: responses({ 200: Settings }, [401, 403]),
        detail: describe(read, {
          tags,
          summary: 'The payout gap threshold',
          description:
            'A closed machine-day whose unexplained shortfall passes `gap_threshold_usd` is flagged and opens the payout_gap alert. Default 1.00 USD (`default: true`). ETag is `version`.',
        }),
      },
    )
    .put(
      '/reconciliation/settings',
      async ({ verb, request, body, set }) => {
        const out = await putSettings({ ...verb, ifMatch: request.headers.get('if-match'), input: body })
        set.headers.etag = out.etag
        return out.body
      },
      {
        beforeHandle: idempotent(deps),
        body: SettingsPut,
        response: responses({ 200: Settings }, [401, 403, 409, 412, 413, 415, 422]),
        detail: describe(write, {
          tags,
          summary: 'Set the payout gap threshold',
          description:
            '`gap_threshold_usd`: USD per machine and day, 0 (flag any shortfall) to 1000000; negative → 422 too_small, above → 422 too_large, at `/gap_threshold_usd`. The flags and the payout_gap alert follow at once. If-Match optional (412 when stale); takes Idempotency-Key.',
        }),
      },
    )
}
