import { describe } from '../../platform/access'
import { API_PREFIX, apiRoutes } from '../../platform/api'
import { etagOf } from '../../platform/etag'
import type { Deps } from '../../platform/context'
import { idempotent } from '../../platform/idempotency'
import { NoContent, responses, IdParams } from '../../platform/schemas'
import { ApplyAnswer, Profile, ProfileCreate, ProfileList, ProfilePatch } from './listing-profiles.model'
import { applyProfile, createProfile, deleteProfile, getProfile, listProfiles, updateListingProfile } from './listing-profiles.service'

const tags = ['marketplaces']
const READ = { role: 'viewer', scope: 'marketplaces:read', reach: 'tenant' } as const
const WRITE = { role: 'admin', scope: 'marketplaces:write', reach: 'tenant' } as const

/** Group listing profiles (docs/marketplaces.md "Listing profiles"). */
export function listingProfilesRoutes(deps: Deps) {
  return apiRoutes('listing-profiles', deps)
    .get('/listing-profiles', ({ verb }) => listProfiles(verb), {
      response: responses({ 200: ProfileList }, [401, 403]),
      detail: describe(READ, { tags, summary: 'List listing profiles', description: 'Oldest first; at most 200 (one per group and marketplace).' }),
    })
    .post(
      '/listing-profiles',
      async ({ verb, body, set }) => {
        const p = await createProfile({ ...verb, input: body })
        set.status = 201
        set.headers.etag = etagOf(p.version)
        set.headers.location = `${API_PREFIX}/listing-profiles/${p.id}`
        return p
      },
      {
        beforeHandle: idempotent(deps),
        body: ProfileCreate,
        response: responses({ 201: Profile }, [401, 403, 404, 409, 413, 415, 422]),
        detail: describe(WRITE, {
          tags,
          summary: "Create a group's listing profile on a marketplace",
          description:
            "Stores the profile; nothing is sent until it is applied (POST /listing-profiles/{id}/apply). Each setting is optional and null leaves that setting of a member's link as it is. `offer` is checked as PUT …/offer checks it (422 with the pointer under /offer); `end_date_days` and `idle_job` are marketplace_a's (marketplace_b → 422 not_supported_by_marketplace). Another tenant's or an unknown group → 404; a second profile for the same group and marketplace → 409. Takes Idempotency-Key.",
        }),
      },
    )
    .get(
      '/listing-profiles/:id',
      async ({ verb, params, set }) => {
        const p = await getProfile({ ...verb, id: params.id })
        set.headers.etag = etagOf(p.version)
        return p
      },
      {
        params: IdParams,
        response: responses({ 200: Profile }, [401, 403, 404, 422]),
        detail: describe(READ, { tags, summary: 'Listing profile detail', description: 'With an ETag of its version.' }),
      },
    )
    .patch(
      '/listing-profiles/:id',
      async ({ verb, request, params, body, set }) => {
        const p = await updateListingProfile({ ...verb, id: params.id, ifMatch: request.headers.get('if-match'), input: body })
        set.headers.etag = etagOf(p.version)
        return p
      },
      {
        params: IdParams,
        body: ProfilePatch,
        response: responses({ 200: Profile }, [401, 403, 404, 412, 413, 415, 422]),
        detail: describe(WRITE, {
          tags,
          summary: 'Change a listing profile',
          description:
            'The fields given replace the stored ones (null clears a setting) and `version` goes up. If-Match optional; 412 when stale. Nothing is sent to the members that had the profile until it is applied again (a server joining the group later gets it as it stands).',
        }),
      },
    )
    .delete(
      '/listing-profiles/:id',
      async ({ verb, params, set }) => {
        await deleteProfile({ ...verb, id: params.id })
        set.status = 204
        return null
      },
      {
        params: IdParams,
        response: responses({ 204: NoContent }, [401, 403, 404, 422]),
        detail: describe(WRITE, { tags, summary: 'Delete a listing profile', description: "The members' links keep what the profile set." }),
      },
    )
    .post('/listing-profiles/:id/apply', ({ verb, params }) => applyProfile({ ...verb, id: params.id }), {
      beforeHandle: idempotent(deps),
      params: IdParams,
      response: responses({ 200: ApplyAnswer }, [401, 403, 404, 409, 422]),
      detail: describe(
        { ...WRITE, denyFrozen: true },
        {
          tags,
          summary: "Apply a listing profile to its group's servers",
          description:
            "For each managed server of the group, by name: publishes `offer` (the operations log names the profile as the reason), sets the rolling end date, sets the idle job (Vast's create_bids), sets or clears keep-on, in that order, paced by the platform's limits. Each server gets an outcome: done, refused (the platform's or gpuhq's reason; its later steps are not taken) or skipped (no link on the marketplace). A server that joins the group later gets the profile from the listing-profiles.apply job (every 10 minutes) once the profile was applied; the profile's `members` show each server's last outcome. Takes Idempotency-Key.",
        },
      ),
    })
}
