import { createHash } from 'node:crypto'
import type { Static } from '@sinclair/typebox'
import type { Actor } from '../../platform/access'
import { perDeps, type Deps } from '../../platform/context'
import { invalidField } from '../../platform/domain-error'
import { formatTimestamp, parseTimestamp } from '../../platform/time'
import { DEFAULT_METRICS, type MetricsQuery } from './metrics.model'
import { floorTo, unsettledFrom } from './rollup.service'
import { rawBuckets, seriesOf, storedBuckets, watermarkOf, type BucketStats } from './telemetry.repository'

/**
 * GET /servers/{id}/metrics (docs/telemetry.md): default
 * range the last 24 h; auto resolution 5m, or 1h for ranges over 48 h (which always read hourly
 * rollups); 1m is a legacy alias of 5m. Every bucket of the range is a point, half-open
 * [t, t + resolution), with nulls where nothing was measured. Buckets the rollup job has not
 * made final yet (from its watermark on) are computed from the raw samples at read time, so a new
 * server's first samples show without waiting for the job. Hot answers are cached 60 s,
 * historical ones an hour.
 */
const US = 1_000_000
const H48 = 48 * 3600 * US
const MAX_SERIES = 200
const MAX_POINTS = 5000
const HOT_TTL_US = 60 * US
const HISTORY_TTL_US = 3600 * US

/**
 * Decimals a point keeps on the wire, by unit: what the sensors resolve and a graph can show, and
 * no float noise such as 32.699999999999996 (an average). Stored rollups keep full precision.
 * A metric of unknown unit keeps 12 significant digits: only the noise goes.
 */
const DECIMALS: Record<string, number> = { '°C': 1, '%': 1, W: 1, MB: 0, MHz: 0, 'Mbit/s': 2 }

function roundForUnit(value: number | null, unit: string | null): number | null {
  if (value === null) return null
  const decimals = unit === null ? undefined : DECIMALS[unit]
  if (decimals === undefined) return Number(value.toPrecision(12))
  const f = 10 ** decimals
  return (Math.sign(value) * Math.round(Math.abs(value) * f)) / f || 0 // halves away from zero; no -0
}

function unitOf(metric: string): string | null {
  if (metric.endsWith('_c')) return '°C'
  if (metric.endsWith('_pct')) return '%'
  if (metric.endsWith('_w')) return 'W'
  if (metric.endsWith('_mb')) return 'MB'
  if (metric.endsWith('_mhz')) return 'MHz'
  if (metric.endsWith('_mbps')) return 'Mbit/s'
  return null
}

/** The server id when the caller may see that server; throws the owner's 404 otherwise (the fleet's, handed in). */
export type ServerScope = (deps: Deps, actor: Actor, id: string) => string

type Answer = { body: ReturnType<typeof build>; etag: string; expiresAt: number }
const answerCache = perDeps(() => new Map<string, Answer>())

export function serverMetrics({
  deps,
  actor,
  id,
  input,
  visibleServer,
}: {
  deps: Deps
  actor: Actor
  id: string
  input: Static<typeof MetricsQuery>
  visibleServer: ServerScope
}): Answer {
  const server = { id: visibleServer(deps, actor, id) }
  const now = deps.clock.nowUs()
  const key = JSON.stringify([server.id, input.from ?? null, input.to ?? null, input.resolution ?? 'auto', input.metric ?? null, input.gpu_index ?? null])
  const cache = answerCache(deps)
  const hit = cache.get(key)
  if (hit && hit.expiresAt > now) return hit

  const to = input.to === undefined ? now : parseTimestamp(input.to)
  if (to === null) throw invalidField('telemetry', '/to', 'format', 'to must be an RFC 3339 timestamp')
  const from = input.from === undefined ? to - 24 * 3600 * US : parseTimestamp(input.from)
  if (from === null) throw invalidField('telemetry', '/from', 'format', 'from must be an RFC 3339 timestamp')
  if (from >= to) throw invalidField('telemetry', '/from', 'not_before_to', 'from must be earlier than to')
  const resolution: 300 | 3600 = to - from > H48 || input.resolution === '1h' ? 3600 : 300
  const first = floorTo(from, resolution)
  const points = Math.ceil((to - first) / (resolution * US))
  if (points > MAX_POINTS)
    throw invalidField(
      'telemetry',
      '/from',
      'range_too_large',
      `at most ${MAX_POINTS} points per series; this range has ${points} at ${resolution === 300 ? '5m' : '1h'}`,
    )

  const metrics = [...new Set(input.metric ?? DEFAULT_METRICS)]
  const series = seriesOf(deps.db, server.id, metrics)
    .filter((s) => s.gpuIndex < 0 || input.gpu_index === undefined || s.gpuIndex === input.gpu_index)
    .sort((a, b) => metrics.indexOf(a.metric) - metrics.indexOf(b.metric) || a.gpuIndex - b.gpuIndex)
  if (series.length > MAX_SERIES)
    throw invalidField(
      'telemetry',
      '/metric',
      'too_many_series',
      `at most ${MAX_SERIES} series; this selection has ${series.length} (restrict gpu_index or metric)`,
    )

  const stored = storedBuckets(
    deps.db,
    series.map((s) => s.id),
    resolution,
    first,
    to,
  )
  const wm = watermarkOf(deps.db, resolution)
  // The buckets not final yet (all of them before the job's first run) come from the raw samples,
  // whole buckets as the job would store them; they replace any stored row of the same bucket.
  const rangeEnd = first + points * resolution * US
  const rawFrom = Math.max(first, wm ? floorTo(unsettledFrom(deps, resolution, wm, now), resolution) : first)
  const fresh = rawBuckets(
    deps.sqlite,
    resolution,
    series.map((s) => s.id),
    rawFrom,
    rangeEnd,
  )
  const bySeries = new Map<number, Map<number, BucketStats>>()
  const put = (seriesId: number, bucket: number, stats: BucketStats) => {
    let m = bySeries.get(seriesId)
    if (!m) bySeries.set(seriesId, (m = new Map()))
    m.set(bucket, stats)
  }
  for (const r of stored)
    put(r.seriesId, r.bucket, { series_id: r.seriesId, bucket: r.bucket, min: r.min, max: r.max, avg: r.avg, p50: r.p50, p95: r.p95, last: r.last })
  for (const r of fresh) put(r.series_id, r.bucket, r)
  // Read from the raw samples up to the range's end, the answer is as fresh as this moment.
  const dataAsOf = rawFrom < rangeEnd ? now : (wm?.updatedAt ?? now)
  const body = build(server.id, resolution, from, to, first, points, series, bySeries, now, dataAsOf)
  const etag = `"${createHash('sha256')
    .update(JSON.stringify([body.resolution, body.from, body.to, body.series]))
    .digest('base64url')
    .slice(0, 27)}"`
  const hot = to > (wm?.doneUntil ?? 0)
  const answer = { body, etag, expiresAt: now + (hot ? HOT_TTL_US : HISTORY_TTL_US) }
  if (cache.size > 5000) cache.clear()
  cache.set(key, answer)
  return answer
}

function build(
  serverId: string,
  resolution: 300 | 3600,
  from: number,
  to: number,
  first: number,
  points: number,
  series: { id: number; gpuIndex: number; metric: string }[],
  bySeries: Map<number, Map<number, BucketStats>>,
  now: number,
  dataAsOf: number,
) {
  const step = resolution * US
  return {
    generated_at: formatTimestamp(now),
    data_as_of: formatTimestamp(Math.min(dataAsOf, now)),
    version: 1,
    stale: false,
    stale_reason: null as string | null,
    server_id: serverId,
    resolution: resolution === 300 ? ('5m' as const) : ('1h' as const),
    from: formatTimestamp(from),
    to: formatTimestamp(to),
    series: series.map((s) => {
      const buckets = bySeries.get(s.id)
      const unit = unitOf(s.metric)
      const r = (v: number | null | undefined) => roundForUnit(v ?? null, unit)
      return {
        metric: s.metric,
        scope: s.gpuIndex < 0 ? ('host' as const) : ('gpu' as const),
        gpu_index: s.gpuIndex < 0 ? null : s.gpuIndex,
        unit,
        points: Array.from({ length: points }, (_, i) => {
          const t = first + i * step
          const b = buckets?.get(t)
          return { t: formatTimestamp(t), min: r(b?.min), max: r(b?.max), avg: r(b?.avg), p50: r(b?.p50), p95: r(b?.p95), last: r(b?.last) }
        }),
      }
    }),
  }
}
