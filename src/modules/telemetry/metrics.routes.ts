import { t } from 'elysia'
import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { ifNoneMatchHits, notModified } from '../../platform/etag'
import { requestState } from '../../platform/http'
import { responses } from '../../platform/schemas'
import { MetricsQuery, MetricsSnapshot } from './metrics.model'
import { serverMetrics, type ServerScope } from './metrics.service'

/** `visibleServer` (the fleet's, handed in by the composition root) answers a server id the caller may see, or 404. */
export function metricsRoutes(deps: Deps, visibleServer: ServerScope) {
  return apiRoutes('metrics', deps).get(
    '/servers/:id/metrics',
    async ({ verb, request, params, query }) => {
      const metric = query.metric === undefined ? undefined : Array.isArray(query.metric) ? query.metric : [query.metric]
      const answer = await serverMetrics({ ...verb, id: params.id, input: { ...query, metric }, visibleServer })
      if (ifNoneMatchHits(request.headers.get('if-none-match'), answer.etag)) return notModified(answer.etag, requestState(request).id)
      // The JSON text as built (MetricsSnapshot, which tests/telemetry check it against): thousands
      // of points are neither built as objects nor checked again on the way out.
      return new Response(answer.json, { headers: { 'content-type': 'application/json', etag: answer.etag } })
    },
    {
      params: t.Object({ id: t.String({ format: 'uuid' }) }),
      query: MetricsQuery,
      response: responses({ 200: MetricsSnapshot }, [304, 401, 403, 404, 422]),
      detail: describe(
        { role: 'viewer', scope: 'servers:read', reach: 'server', serverParam: 'id' },
        {
          tags: ['servers'],
          summary: 'Metric series of a server',
          description:
            'Rollups with min, max, avg, p50, p95 and last per bucket. Numbers are rounded to their unit (halves away from zero): °C, % and W to 0.1, MB and MHz whole, Mbit/s to 0.01, any other unit to 12 significant digits. At most 20 metric names, 200 series and 5000 points per series (422 beyond). ETag / If-None-Match → 304.',
        },
      ),
    },
  )
}
