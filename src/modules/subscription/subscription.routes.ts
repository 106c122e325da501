import { t } from 'elysia'
import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { ifNoneMatchHits, notModified } from '../../platform/etag'
import { requestState } from '../../platform/http'
import { idempotent } from '../../platform/idempotency'
import { responses } from '../../platform/schemas'
import { Change, ChangeOrder, CurrentPlan, Quote, QuoteQuery, Subscription } from './subscription.model'
import { quote } from './subscription.quote'
import { cancelChange, currentPlan, getSubscription, orderChange } from './subscription.service'

const tags = ['subscription']

export function subscriptionRoutes(deps: Deps) {
  return apiRoutes('subscription', deps)
    .get('/plans/current', ({ verb }) => currentPlan(verb), {
      response: responses({ 200: CurrentPlan }, [401, 403]),
      detail: describe(
        { role: 'viewer', scope: 'billing:read', reach: 'tenant' },
        { tags: ['plans'], summary: "What the tenant's plan allows now", description: 'plan is null when the tenant has no plan assignment.' },
      ),
    })
    .get(
      '/subscription',
      async ({ verb, request, set }) => {
        const { body, etag } = await getSubscription(verb)
        // The 304 is a Response beside the 200 body: Elysia types an async handler's answer as one or the other.
        if (ifNoneMatchHits(request.headers.get('if-none-match'), etag)) return notModified(etag, requestState(request).id) as never
        set.headers.etag = etag
        return body
      },
      {
        response: responses({ 200: Subscription }, [304, 401, 403]),
        detail: describe(
          { role: 'viewer', scope: 'billing:read', reach: 'tenant' },
          {
            tags,
            summary: 'Current plan and the ordered change',
            description: 'ETag is the subscription version (send it as If-Match to replace a pending change).',
          },
        ),
      },
    )
    .get('/subscription/quote', ({ verb, query }) => quote({ ...verb, plan: query.plan }), {
      query: QuoteQuery,
      response: responses({ 200: Quote }, [401, 403, 404, 409, 422]),
      detail: describe(
        { role: 'viewer', scope: 'billing:read', requiresPlan: true, reach: 'tenant' },
        {
          tags,
          summary: 'What changing to a plan would mean',
          description:
            'Direction from effective prices only. Only an upgrade is gated: one day of the target plan at the current fleet against the balance. Contract-priced target → 403 feature_not_entitled.',
        },
      ),
    })
    .post(
      '/subscription/changes',
      async ({ verb, request, body, set }) => {
        const r = await orderChange({ ...verb, input: body, ifMatch: request.headers.get('if-match') })
        set.status = r.created ? 201 : 200
        return r.change
      },
      {
        beforeHandle: idempotent(deps),
        body: ChangeOrder,
        headers: t.Object({ 'idempotency-key': t.Optional(t.String({ minLength: 1, maxLength: 128 })), 'if-match': t.Optional(t.String({ maxLength: 256 })) }),
        response: responses({ 200: Change, 201: Change }, [401, 403, 404, 409, 412, 413, 415, 422]),
        detail: describe(
          { role: 'admin', scope: 'billing:write', denyFrozen: true, requiresPlan: true, reach: 'tenant' },
          {
            tags,
            summary: 'Order a plan change',
            description:
              "200 when applied now (upgrade covered by the balance, or lateral); 201 when scheduled (downgrade: the first UTC day of next month, or the next day by the plan's policy) or awaiting_payment (upgrade not covered: pay with a top-up whose purpose is {kind: subscription_change, target_plan, change_id}; it is applied inside the verified payment). A live pending change → 409 change_already_pending unless If-Match carries the subscription version, which replaces it. Fleet above the target's limit → 409 server_limit_reached.",
          },
        ),
      },
    )
    .delete('/subscription/changes/:id', ({ verb, params }) => cancelChange({ ...verb, id: params.id }), {
      params: t.Object({ id: t.String({ format: 'uuid' }) }),
      response: responses({ 200: Change }, [401, 403, 404, 409, 422]),
      detail: describe(
        { role: 'admin', scope: 'billing:write', reach: 'tenant' },
        {
          tags,
          summary: 'Cancel a pending plan change',
          description: '409 change_already_applied when it was applied; 409 change_effective when its day has come.',
        },
      ),
    })
}
