import { describe } from '../../platform/access'
import { API_PREFIX, apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { etagOf } from '../../platform/etag'
import { idempotent } from '../../platform/idempotency'
import { NoContent, responses } from '../../platform/schemas'
import { createPolicy, deletePolicy, getPolicy, listPolicies, updatePolicy } from './policies.service'
import {
  DismissBody,
  IdParams,
  Policy,
  PolicyCreate,
  PolicyList,
  PolicyPatch,
  PreviewAnswer,
  PreviewBody,
  Suggestion,
  SuggestionList,
  SuggestionsQuery,
} from './strategy.model'
import { acceptSuggestion, dismissSuggestion, listSuggestions, previewPolicy } from './suggestions.service'

const tags = ['strategy']
const READ = { role: 'viewer', scope: 'strategy:read', entitlement: 'strategy', reach: 'server' } as const
const WRITE = { role: 'admin', scope: 'strategy:write', entitlement: 'strategy', reach: 'server' } as const

/** Pricing strategy (docs/strategy.md): policies, their suggestions, and a preview. Plans pro and enterprise only. */
export function strategyRoutes(deps: Deps) {
  return apiRoutes('strategy', deps)
    .get('/strategy/policies', ({ verb }) => listPolicies(verb), {
      response: responses({ 200: PolicyList }, [401, 403]),
      detail: describe(READ, { tags, summary: 'List pricing policies', description: 'Oldest first; at most 50 per tenant.' }),
    })
    .post(
      '/strategy/policies',
      async ({ verb, body, set }) => {
        const p = await createPolicy({ ...verb, input: body })
        set.status = 201
        set.headers.etag = etagOf(p.version)
        set.headers.location = `${API_PREFIX}/strategy/policies/${p.id}`
        return p
      },
      {
        beforeHandle: idempotent(deps),
        body: PolicyCreate,
        response: responses({ 201: Policy }, [401, 403, 404, 409, 413, 415, 422]),
        detail: describe(WRITE, {
          tags,
          summary: 'Create a pricing policy',
          description:
            "A policy prices the listed offers of its target on one marketplace: the market's asking price of the model at `target_percentile`, never below the floor (the owner's costs per GPU-hour from the cost basis, plus `min_margin_percent`, grossed up by the platform's cut) nor above `ceiling_gpu_hour`, in multiples of `rounding_step`; strategy.suggest looks again every `cadence_minutes`. `target` names exactly one of server_ids, group_id, gpu_model; a server or group of another tenant is 404. A field of the other platform (raise_while_rented on marketplace_b, coin on marketplace_a) is 422 not_supported_by_marketplace. More than 50 policies: 409. Takes Idempotency-Key. Answers the policy with its ETag.",
        }),
      },
    )
    .get(
      '/strategy/policies/:id',
      async ({ verb, params, set }) => {
        const p = await getPolicy({ ...verb, id: params.id })
        set.headers.etag = etagOf(p.version)
        return p
      },
      {
        params: IdParams,
        response: responses({ 200: Policy }, [401, 403, 404, 422]),
        detail: describe(READ, {
          tags,
          summary: 'A pricing policy',
          description: 'Beyond the routes decisions.md lists: the ETag a PATCH or DELETE sends as If-Match.',
        }),
      },
    )
    .patch(
      '/strategy/policies/:id',
      async ({ verb, request, params, body, set }) => {
        const p = await updatePolicy({ ...verb, id: params.id, ifMatch: request.headers.get('if-match'), input: body })
        set.headers.etag = etagOf(p.version)
        return p
      },
      {
        params: IdParams,
        body: PolicyPatch,
        response: responses({ 200: Policy }, [401, 403, 404, 412, 413, 415, 422]),
        detail: describe(WRITE, {
          tags,
          summary: 'Change a pricing policy',
          description:
            'Only the fields given change; the marketplace is fixed. If-Match (the ETag of the policy) is honoured: a stale tag is 412. The suggestions the policy left pending are superseded, and it looks again at the next strategy.suggest run.',
        }),
      },
    )
    .delete(
      '/strategy/policies/:id',
      async ({ verb, request, params, set }) => {
        await deletePolicy({ ...verb, id: params.id, ifMatch: request.headers.get('if-match') })
        set.status = 204
        return null
      },
      {
        params: IdParams,
        response: responses({ 204: NoContent }, [401, 403, 404, 412, 422]),
        detail: describe(WRITE, {
          tags,
          summary: 'Delete a pricing policy',
          description: 'If-Match honoured (412 when stale). Its pending suggestions are superseded; decided ones stay in the history.',
        }),
      },
    )
    .get('/strategy/suggestions', ({ verb, query }) => listSuggestions({ ...verb, query }), {
      query: SuggestionsQuery,
      response: responses({ 200: SuggestionList }, [401, 403, 422]),
      detail: describe(READ, {
        tags,
        summary: 'Price suggestions',
        description:
          'Newest first, paginated; filters state, policy_id, server_id, marketplace. Each carries the price the policy would set, the current one, why (market percentile, floor and its parts, ceiling), the expected change in daily earnings at the same occupancy, and the exact offer body accepting publishes. A token with a server allowlist sees only its servers.',
      }),
    })
    .post('/strategy/suggestions/:id/accept', ({ verb, params }) => acceptSuggestion({ ...verb, id: params.id }), {
      beforeHandle: idempotent(deps),
      params: IdParams,
      response: responses({ 200: Suggestion }, [401, 403, 404, 409, 422, 503]),
      detail: describe(
        { ...WRITE, denyFrozen: true },
        {
          tags,
          summary: 'Accept a suggestion: publish its price',
          description:
            "Publishes the suggestion's `offer` through PUT /marketplaces/links/{server_id}/{marketplace}/offer's path (the operations log shows the call with reason `strategy suggestion <id>`). Accepting an accepted suggestion answers it again and publishes nothing; a dismissed or superseded one is 409; one being accepted right now is 409. On marketplace_b a lowering within 600 s of the last accepted lowering of that server is 409 (the platform's limit). The marketplace's refusal or absence answers as publishing does (409, 422, 503), and the suggestion stays pending. Takes Idempotency-Key; refused while the account is frozen.",
        },
      ),
    })
    .post('/strategy/suggestions/:id/dismiss', ({ verb, params, body }) => dismissSuggestion({ ...verb, id: params.id, input: body }), {
      params: IdParams,
      body: DismissBody,
      response: responses({ 200: Suggestion }, [401, 403, 404, 409, 413, 415, 422]),
      detail: describe(WRITE, {
        tags,
        summary: 'Dismiss a suggestion, saying why',
        description: 'Dismissing a dismissed suggestion answers it unchanged; an accepted or superseded one is 409.',
      }),
    })
    .post('/strategy/preview', ({ verb, body }) => previewPolicy({ ...verb, input: body }), {
      body: PreviewBody,
      response: responses({ 200: PreviewAnswer }, [401, 403, 404, 413, 415, 422]),
      detail: describe(READ, {
        tags,
        summary: 'What a policy would set now, without saving it',
        description:
          'The body of POST /strategy/policies (name optional), applied now to the offers it targets, alone (whatever other policies say). Answers each offer as a suggestion would show it, and the targeted servers that could not be priced, with why.',
      }),
    })
}
