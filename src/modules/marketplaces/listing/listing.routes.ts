import { describe } from '../../../platform/access'
import { apiRoutes, type Verb } from '../../../platform/api'
import type { Deps } from '../../../platform/context'
import { idempotent } from '../../../platform/idempotency'
import { NoContent, responses } from '../../../platform/schemas'
import type { MarketplaceId } from '../adapters/marketplaces.adapter'
import { LinkAnswer, LinkParams } from '../marketplaces.model'
import { IdleJobBody, RollingEndDateBody } from './listing.model'
import { clearRollingEndDate, removeIdleJob, setIdleJob, setRollingEndDate } from './listing.service'

const tags = ['marketplaces']
const WRITE = { role: 'admin', scope: 'marketplaces:write', reach: 'server' } as const
const BASE = '/marketplaces/links/:server_id/:marketplace'

/** A link's listing settings (docs/marketplaces.md "Rolling end dates", "Idle jobs"). */
export function listingRoutes(deps: Deps) {
  const target = (verb: Verb, params: { server_id: string; marketplace: MarketplaceId }) => ({
    ...verb,
    serverId: params.server_id,
    marketplace: params.marketplace,
  })
  const deleted = (set: { status?: number | string }) => {
    set.status = 204
    return null
  }
  return apiRoutes('marketplace-listing', deps)
    .put(`${BASE}/rolling-end-date`, ({ verb, params, body }) => setRollingEndDate({ ...target(verb, params), input: body }), {
      beforeHandle: idempotent(deps),
      params: LinkParams,
      body: RollingEndDateBody,
      response: responses({ 200: LinkAnswer }, [401, 403, 404, 409, 413, 415, 422]),
      detail: describe(WRITE, {
        tags,
        summary: "Keep the linked machine's offer end date at least N days ahead",
        description:
          "marketplace_a only. Stored on the link (`listing.end_date_days`); nothing is sent now. From the next marketplaces.sync on, a listed offer whose end date is unknown or less than `days` ahead gets a new end date `days` + 7 days ahead (to a whole UTC day), sent as create_asks with the prices listed now; the operations log shows each extension with its reason, and the server's events `marketplace.end_date_extended`. Vast also extends running contracts to a new end date. The same horizon is never extended twice: the end date gpuhq set counts until the platform is read again. Changing `days` starts afresh. marketplace_b has no listing end date → 422 not_supported_by_marketplace; no link → 404; no account connected → 409. Takes Idempotency-Key.",
      }),
    })
    .delete(
      `${BASE}/rolling-end-date`,
      async ({ verb, params, set }) => {
        await clearRollingEndDate(target(verb, params))
        return deleted(set)
      },
      {
        params: LinkParams,
        response: responses({ 204: NoContent }, [401, 403, 404, 422]),
        detail: describe(WRITE, {
          tags,
          summary: 'Stop keeping the offer end date ahead',
          description: 'The end date on the platform stays as it is; the sync no longer extends it. No link → 404.',
        }),
      },
    )
    .put(`${BASE}/idle-job`, ({ verb, params, body }) => setIdleJob({ ...target(verb, params), input: body }), {
      beforeHandle: idempotent(deps),
      params: LinkParams,
      body: IdleJobBody,
      response: responses({ 200: LinkAnswer }, [401, 403, 404, 409, 413, 415, 422, 503]),
      detail: describe(
        { ...WRITE, denyFrozen: true },
        {
          tags,
          summary: 'Set the idle job the machine runs while no renter holds its GPUs',
          description:
            "marketplace_a: Vast's default job, `PUT /machines/create_bids/` {machine, price_gpu, price_inetu, price_inetd, image, args} (paced at Vast's 2.8 s threshold plus 10 %). Shown on the link as `listing.idle_job` once Vast accepted it. marketplace_b's API documents no call that sets a background job → 422 not_supported_by_marketplace. The platform refusing it → 422 refused_by_marketplace with its reason; unreachable → 503. Takes Idempotency-Key.",
        },
      ),
    })
    .delete(
      `${BASE}/idle-job`,
      async ({ verb, params, set }) => {
        await removeIdleJob(target(verb, params))
        return deleted(set)
      },
      {
        beforeHandle: idempotent(deps),
        params: LinkParams,
        response: responses({ 204: NoContent }, [401, 403, 404, 409, 422, 503]),
        detail: describe(WRITE, {
          tags,
          summary: 'Remove the idle job',
          description:
            "marketplace_a: `DELETE /machines/{id}/defjob/` (paced at Vast's 1.2 s threshold plus 10 %); allowed while the account is frozen. marketplace_b → 422 not_supported_by_marketplace. Takes Idempotency-Key.",
        }),
      },
    )
}
