import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { ifNoneMatchHits, notModified } from '../../platform/etag'
import { requestState } from '../../platform/http'
import { responses, IdParams } from '../../platform/schemas'
import { FleetReadiness, ServerReadiness } from './readiness.model'
import { fleetReadiness, serverReadiness } from './readiness.service'

const tags = ['servers']

export function readinessRoutes(deps: Deps) {
  return apiRoutes('readiness', deps)
    .get(
      '/servers/:id/readiness',
      async ({ verb, request, params, set }) => {
        const out = await serverReadiness({ ...verb, id: params.id })
        // The 304 is a Response beside the 200 body: Elysia types an async handler's answer as one or the other.
        if (ifNoneMatchHits(request.headers.get('if-none-match'), out.etag)) return notModified(out.etag, requestState(request).id) as never
        set.headers.etag = out.etag
        return out.body
      },
      {
        params: IdParams,
        response: responses({ 200: ServerReadiness }, [304, 401, 403, 404, 422]),
        detail: describe(
          { role: 'viewer', scope: 'servers:read', reach: 'server', serverParam: 'id' },
          {
            tags,
            summary: "The server's readiness per marketplace, against the marketplaces' own bar",
            description:
              "One check list per marketplace (Vast's self-test pre-flight thresholds plus what loses verification in practice; docs/readiness.md): each item's status, measured value, threshold, the source of both and what to do. Computed on every read from the agent's facts and the link's platform view. ETag / If-None-Match → 304 (the tag leaves out `evaluated_at`).",
          },
        ),
      },
    )
    .get(
      '/readiness',
      async ({ verb, request, set }) => {
        const out = await fleetReadiness(verb)
        // The 304 is a Response beside the 200 body: Elysia types an async handler's answer as one or the other.
        if (ifNoneMatchHits(request.headers.get('if-none-match'), out.etag)) return notModified(out.etag, requestState(request).id) as never
        set.headers.etag = out.etag
        return out.body
      },
      {
        response: responses({ 200: FleetReadiness }, [304, 401, 403]),
        detail: describe(
          { role: 'viewer', scope: 'servers:read', reach: 'server' },
          {
            tags,
            summary: 'Readiness of the whole fleet',
            description:
              'Every managed server you may see (like GET /dashboard, one answer, not a page): its verdict, and per marketplace the ids of the failing items and of the required items still unknown; counts by verdict. ETag / If-None-Match → 304.',
          },
        ),
      },
    )
}
