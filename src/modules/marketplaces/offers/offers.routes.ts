import { describe } from '../../../platform/access'
import { apiRoutes, type Verb } from '../../../platform/api'
import type { Deps } from '../../../platform/context'
import { idempotent } from '../../../platform/idempotency'
import { NoContent, responses } from '../../../platform/schemas'
import type { MarketplaceId } from '../adapters/marketplaces.adapter'
import { LinkAnswer, LinkParams, MaintenanceBody, OfferAnswer, OfferBody } from '../marketplaces.model'
import { announceMaintenance, cancelMaintenance, publishOffer, withdrawOffer } from './offers.service'

const tags = ['marketplaces']
const WRITE = { role: 'admin', scope: 'marketplaces:write', reach: 'server' } as const

/** Offers and maintenance windows of linked machines (docs/marketplaces.md "Publishing an offer", "Maintenance windows"). */
export function offersRoutes(deps: Deps) {
  const target = (verb: Verb, params: { server_id: string; marketplace: MarketplaceId }) => ({
    ...verb,
    serverId: params.server_id,
    marketplace: params.marketplace,
  })
  return apiRoutes('marketplace-offers', deps)
    .put('/marketplaces/links/:server_id/:marketplace/offer', ({ verb, params, body }) => publishOffer({ ...target(verb, params), input: body }), {
      beforeHandle: idempotent(deps),
      params: LinkParams,
      body: OfferBody,
      response: responses({ 200: OfferAnswer }, [401, 403, 404, 409, 413, 415, 422, 503]),
      detail: describe(
        { ...WRITE, denyFrozen: true },
        {
          tags,
          summary: "Publish or update the linked machine's offer",
          description:
            'The `remote` projection\'s names. marketplace_a (USD): `price_gpu_hour` (required), `min_bid_hour`, `price_storage_gb_month`, `price_inet_up_tb`, `price_inet_down_tb` (sent per GB, ÷ 1000), `min_gpu_count` (min_chunk; never sent null: the current one, or 1, when omitted), `end_date` (unix seconds to Vast), `discount_max`; omitted prices keep what the platform has. marketplace_b: `coin_prices` (per day, per whole server, per coin; each coin given is enabled and pinned in the coin) and `max_rental_hours` (mrl). A field of the other platform → 422 with code not_supported_by_marketplace. The platform refusing the request → 422 with errors[0] {path: "", code: "refused_by_marketplace"} and its reason; no link → 404; no account connected, or a stored key rejected or without machine_write → 409; a drain of the server not finished → 409 naming it (the drain relists the offer it kept when its work is done); unreachable → 503 with Retry-After. The answer carries the link as it now stands and `warnings` (raising a marketplace_a price while renters run creates pending increases; an end_date extends running contracts). Refused while the account is frozen. Takes Idempotency-Key.',
        },
      ),
    })
    .delete(
      '/marketplaces/links/:server_id/:marketplace/offer',
      async ({ verb, params, set }) => {
        await withdrawOffer(target(verb, params))
        set.status = 204
        return null
      },
      {
        beforeHandle: idempotent(deps),
        params: LinkParams,
        response: responses({ 204: NoContent }, [401, 403, 404, 409, 422, 503]),
        detail: describe(WRITE, {
          tags,
          summary: "Withdraw the linked machine's offer",
          description:
            'marketplace_a: DELETE /machines/{id}/asks/; marketplace_b: set_server_settings with availability false. The kept offer is dropped, so keep-on has nothing to re-publish. Allowed while the account is frozen: taking an offer off the market is always possible. Takes Idempotency-Key.',
        }),
      },
    )
    .put('/marketplaces/links/:server_id/:marketplace/maintenance', ({ verb, params, body }) => announceMaintenance({ ...target(verb, params), input: body }), {
      beforeHandle: idempotent(deps),
      params: LinkParams,
      body: MaintenanceBody,
      response: responses({ 200: LinkAnswer }, [401, 403, 404, 409, 413, 415, 422, 503]),
      detail: describe(
        { ...WRITE, denyFrozen: true },
        {
          tags,
          summary: 'Announce a maintenance window to the renters of the linked machine',
          description:
            "marketplace_a only (Vast's dnotify): `starts_at` in the future and at most a year ahead, whole `hours` (at least 1), a `category` (power, internet, disk, gpu, software, other) and an optional `reason`. It notifies renters; it does not stop instances or unlist the machine. Reflected in `remote.maintenance_*`. marketplace_b has no maintenance API → 422 with code not_supported_by_marketplace, pointing to withdrawing the offer. Takes Idempotency-Key.",
        },
      ),
    })
    .delete(
      '/marketplaces/links/:server_id/:marketplace/maintenance',
      async ({ verb, params, set }) => {
        await cancelMaintenance(target(verb, params))
        set.status = 204
        return null
      },
      {
        beforeHandle: idempotent(deps),
        params: LinkParams,
        response: responses({ 204: NoContent }, [401, 403, 404, 409, 422, 503]),
        detail: describe(WRITE, {
          tags,
          summary: 'Cancel the announced maintenance windows of the linked machine',
          description: "marketplace_a only (Vast's cancel_maint); marketplace_b → 422 not_supported_by_marketplace. Takes Idempotency-Key.",
        }),
      },
    )
}
