import { Elysia, t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { actorOf, describe } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { ifNoneMatchHits, notModified } from '../../platform/etag'
import { requestState } from '../../platform/http'
import { Nullable, responses, Timestamp, Uuid } from '../../platform/schemas'
import { DEFAULT_METRICS, serverMetrics } from './metrics.service'

const N = Nullable(Type.Number())
const MetricsSnapshot = Type.Object({
  generated_at: Timestamp(),
  data_as_of: Timestamp({ description: 'When the rollups were last brought up to date' }),
  version: Type.Integer(),
  stale: Type.Boolean(),
  stale_reason: Nullable(Type.String({ maxLength: 256 })),
  server_id: Uuid(),
  resolution: Type.Union([Type.Literal('5m'), Type.Literal('1h')], { description: 'Effective resolution' }),
  from: Timestamp(),
  to: Timestamp(),
  series: Type.Array(
    Type.Object({
      metric: Type.String({ pattern: '^[a-z][a-z0-9_]{1,63}$' }),
      scope: Type.Union([Type.Literal('host'), Type.Literal('gpu')]),
      gpu_index: Nullable(Type.Integer()),
      unit: Nullable(Type.String({ maxLength: 16 })),
      points: Type.Array(
        Type.Object({ t: Timestamp({ description: 'Bucket start; the bucket is [t, t + resolution)' }), min: N, max: N, avg: N, p50: N, p95: N, last: N }),
        { maxItems: 5000 },
      ),
    }),
    { maxItems: 200 },
  ),
})

export function metricsRoutes(deps: Deps) {
  return new Elysia({ name: 'metrics', prefix: '/api/v1' }).get(
    '/servers/:id/metrics',
    ({ request, params, query, set }) => {
      const metric = query.metric === undefined ? undefined : Array.isArray(query.metric) ? query.metric : [query.metric]
      const answer = serverMetrics({ deps, actor: actorOf(request), id: params.id, input: { ...query, metric } })
      if (ifNoneMatchHits(request.headers.get('if-none-match'), answer.etag)) return notModified(answer.etag, requestState(request).id)
      set.headers.etag = answer.etag
      return answer.body
    },
    {
      params: t.Object({ id: t.String({ format: 'uuid' }) }),
      query: t.Object({
        from: t.Optional(t.String({ maxLength: 64, description: 'RFC 3339; default to minus 24 h; inclusive' })),
        to: t.Optional(t.String({ maxLength: 64, description: 'RFC 3339; default now; exclusive' })),
        resolution: t.Optional(
          t.Union([t.Literal('auto'), t.Literal('1m'), t.Literal('5m'), t.Literal('1h')], {
            description: 'auto (default) picks 5m, or 1h for ranges over 48 h; 1m is a legacy alias of 5m',
          }),
        ),
        metric: t.Optional(
          t.Array(t.String({ pattern: '^[a-z][a-z0-9_]{1,63}$' }), {
            maxItems: 20,
            description: `Repeat for several: ?metric=a&metric=b. Default: ${DEFAULT_METRICS.join(', ')}`,
          }),
        ),
        gpu_index: t.Optional(t.Integer({ minimum: 0, maximum: 127, description: 'Restricts GPU series; host series are unaffected' })),
      }),
      response: responses({ 200: MetricsSnapshot }, [304, 401, 403, 404, 422]),
      detail: describe(
        { role: 'viewer', scope: 'servers:read', serverParam: 'id' },
        {
          tags: ['servers'],
          summary: 'Metric series of a server',
          description:
            'Rollups with min, max, avg, p50, p95 and last per bucket. At most 20 metric names, 200 series and 5000 points per series (422 beyond). ETag / If-None-Match → 304.',
        },
      ),
    },
  )
}
