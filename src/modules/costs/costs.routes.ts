import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { ifNoneMatchHits, notModified } from '../../platform/etag'
import { requestState } from '../../platform/http'
import { idempotent } from '../../platform/idempotency'
import { responses } from '../../platform/schemas'
import { CostBasis, CostBasisPatch } from './costs.model'
import { getCostBasis, putCostBasis } from './costs.service'

const tags = ['billing']

/** The owner's own costs (docs/earnings.md "Cost basis"). */
export function costsRoutes(deps: Deps) {
  return apiRoutes('costs', deps)
    .get(
      '/billing/cost-basis',
      async ({ verb, request, set }) => {
        const out = await getCostBasis(verb)
        // The 304 is a Response beside the 200 body: Elysia types an async handler's answer as one or the other.
        if (ifNoneMatchHits(request.headers.get('if-none-match'), out.etag)) return notModified(out.etag, requestState(request).id) as never
        set.headers.etag = out.etag
        return out.body
      },
      {
        response: responses({ 200: CostBasis }, [401, 403]),
        detail: describe(
          { role: 'viewer', scope: 'billing:read', reach: 'tenant' },
          {
            tags,
            summary: "The owner's cost basis: electricity, operational cost, commissions, rental revenue",
            description:
              "The customer's own costs, not the service's: the ledger never sees them. Every rate is nullable (null: not entered, never zero). Commissions are per marketplace and deal currency; `percent` resolves a currency without its own rate to the marketplace-wide one. `defaults` lists what the margin calculation uses where nothing is entered. ETag is `version`.",
          },
        ),
      },
    )
    .put(
      '/billing/cost-basis',
      async ({ verb, request, body, set }) => {
        const out = await putCostBasis({ ...verb, ifMatch: request.headers.get('if-match'), input: body })
        set.headers.etag = out.etag
        return out.body
      },
      {
        beforeHandle: idempotent(deps),
        body: CostBasisPatch,
        response: responses({ 200: CostBasis }, [401, 403, 409, 412, 413, 415, 422]),
        detail: describe(
          { role: 'admin', scope: 'billing:write', reach: 'tenant' },
          {
            tags,
            summary: 'Change the cost basis (partial: only the fields sent change)',
            description:
              '`electricity_usd_per_kwh`, `operational.usd_per_month` (money, not negative), and per marketplace `commission_percent` (the fallback), `commissions` {currency: percent} and `renter_markup_percent`; null clears a field. A zero commission → 422 with code zero_not_allowed (send null for not entered); an unknown currency → 422 unknown_currency. If-Match optional (412 when stale); takes Idempotency-Key.',
          },
        ),
      },
    )
}
