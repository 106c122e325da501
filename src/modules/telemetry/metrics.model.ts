import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Nullable, Timestamp, Uuid } from '../../platform/schemas'

/** What GET /servers/{id}/metrics shows when no metric is named. */
export const DEFAULT_METRICS = ['temperature_c', 'utilization_pct', 'power_w', 'fan_pct', 'memory_used_mb', 'cpu_usage_pct', 'memory_used_pct']

/** GET /servers/{id}/metrics query (Elysia's `t`, which coerces query strings). */
export const MetricsQuery = t.Object({
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
})

const N = Nullable(Type.Number())
export const MetricsSnapshot = Type.Object({
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
      unit: Nullable(
        Type.String({ maxLength: 16, description: 'From the metric name: °C (_c), % (_pct), W (_w), MB (_mb), MHz (_mhz), Mbit/s (_mbps), else null' }),
      ),
      points: Type.Array(
        Type.Object(
          { t: Timestamp({ description: 'Bucket start; the bucket is [t, t + resolution)' }), min: N, max: N, avg: N, p50: N, p95: N, last: N },
          { description: "Statistics rounded to the unit's precision: °C, % and W to 0.1, MB and MHz whole, Mbit/s to 0.01, no unit to 12 significant digits" },
        ),
        { maxItems: 5000 },
      ),
    }),
    { maxItems: 200 },
  ),
})
