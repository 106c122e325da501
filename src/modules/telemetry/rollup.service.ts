import { eq, lt, sql } from 'drizzle-orm'
import { metricRollups, metricSamples, rollupWatermarks } from '../../../db/schema'
import { withTransaction, changesOf } from '../../../db/client'
import type { Deps } from '../../platform/context'

/**
 * The `metrics.rollup` job: raw samples → 5-minute and hourly buckets with min, max, avg, p50, p95
 * and last (SQLite's percentile_cont, linear interpolation). Each run recomputes every bucket from
 * the watermark (or from a late sample's bucket) up to now, the running bucket included, in chunks;
 * a recomputation writes the same numbers, so running it twice changes nothing, and after downtime
 * it catches up from where it stopped (as far back as raw samples are kept).
 */
export const GRAINS = [300, 3600] as const
export type Grain = (typeof GRAINS)[number]
const US = 1_000_000
/** Buckets recomputed per transaction while catching up. */
const CHUNK_BUCKETS = { 300: 72, 3600: 24 } as const

export const floorTo = (us: number, grainS: number) => Math.floor(us / (grainS * US)) * grainS * US

/**
 * The statistics of every bucket of `grain` with raw samples in [?3, ?4), one row per series and
 * bucket; `filtered` adds "AND the series is in the JSON array ?5". The rollup job stores these
 * rows; GET /metrics computes the same rows for the part of a range not rolled up yet.
 */
const bucketsOfRaw = (filtered: boolean) => `
  SELECT s.series_id AS series_id, ?1 AS grain, (s.t / ?2) * ?2 AS bucket,
         min(s.value) AS min, max(s.value) AS max, avg(s.value) AS avg,
         percentile_cont(s.value, 0.5) AS p50, percentile_cont(s.value, 0.95) AS p95,
         (SELECT l.value FROM metric_samples l WHERE l.series_id = s.series_id AND l.t >= (s.t / ?2) * ?2 AND l.t < (s.t / ?2) * ?2 + ?2 ORDER BY l.t DESC LIMIT 1) AS last,
         count(*) AS samples
  FROM metric_samples s
  WHERE s.t >= ?3 AND s.t < ?4${filtered ? ' AND s.series_id IN (SELECT value FROM json_each(?5))' : ''}
  GROUP BY s.series_id, bucket`

function rollupRange(deps: Deps, grain: Grain, fromUs: number, toUs: number): number {
  const r = deps.sqlite
    .query(
      `INSERT INTO metric_rollups (series_id, grain, bucket, min, max, avg, p50, p95, last, samples)
       ${bucketsOfRaw(false)}
       ON CONFLICT (series_id, grain, bucket) DO UPDATE SET
         min = excluded.min, max = excluded.max, avg = excluded.avg, p50 = excluded.p50,
         p95 = excluded.p95, last = excluded.last, samples = excluded.samples`,
    )
    .run(grain, grain * US, fromUs, toUs)
  return r.changes
}

export type BucketStats = {
  series_id: number
  bucket: number
  min: number | null
  max: number | null
  avg: number | null
  p50: number | null
  p95: number | null
  last: number | null
}

/** What the rollup job would store for these series in [fromUs, toUs), read straight from the raw samples. */
export function rawBuckets(deps: Deps, grain: Grain, seriesIds: number[], fromUs: number, toUs: number): BucketStats[] {
  if (seriesIds.length === 0 || fromUs >= toUs) return []
  return deps.sqlite.query(bucketsOfRaw(true)).all(grain, grain * US, fromUs, toUs, JSON.stringify(seriesIds)) as BucketStats[]
}

/**
 * Where a grain's stored buckets stop being final: its watermark, or an earlier bucket a late sample
 * asked to redo. A late sample re-rolls only buckets wholly inside the raw history: one that began
 * before it would be recomputed from what is left, its numbers replaced by the late sample's own.
 */
export function unsettledFrom(deps: Deps, grain: Grain, wm: { doneUntil: number; redoFrom: number | null }, now: number): number {
  const rawStart = now - deps.config.metricsRetention.rawHours * 3600 * US
  const redo = wm.redoFrom === null ? Number.POSITIVE_INFINITY : Math.max(wm.redoFrom, floorTo(rawStart + grain * US - 1, grain))
  return Math.min(wm.doneUntil, redo)
}

export function runRollups(deps: Deps): string {
  const now = deps.clock.nowUs()
  const parts: string[] = []
  for (const grain of GRAINS) {
    const wm = deps.db.select().from(rollupWatermarks).where(eq(rollupWatermarks.grain, grain)).get()
    let from: number
    if (wm) {
      from = unsettledFrom(deps, grain, wm, now)
    } else {
      const first = deps.db
        .select({ t: sql<number | null>`min(${metricSamples.t})` })
        .from(metricSamples)
        .get()?.t
      from = first ?? now
    }
    from = floorTo(from, grain)
    const end = floorTo(now, grain) + grain * US // the running bucket too
    const completeUntil = floorTo(now, grain)
    let buckets = 0
    for (let chunk = from; chunk < end; chunk += CHUNK_BUCKETS[grain] * grain * US) {
      const chunkEnd = Math.min(end, chunk + CHUNK_BUCKETS[grain] * grain * US)
      withTransaction(deps.db, (tx) => {
        buckets += rollupRange(deps, grain, chunk, chunkEnd)
        const doneUntil = Math.min(chunkEnd, completeUntil)
        tx.insert(rollupWatermarks)
          .values({ grain, doneUntil, redoFrom: null, updatedAt: now })
          .onConflictDoUpdate({ target: rollupWatermarks.grain, set: { doneUntil, redoFrom: null, updatedAt: now } })
          .run()
      })
    }
    parts.push(`${grain === 300 ? '5m' : '1h'}: ${buckets} buckets`)
  }
  return parts.join(', ')
}

/** Retention per grain (configurable); deleting old rows changes nothing newer. */
export function pruneTelemetry(deps: Deps): string {
  const now = deps.clock.nowUs()
  const { rawHours, fiveMinuteDays, hourlyDays } = deps.config.metricsRetention
  return withTransaction(deps.db, (tx) => {
    const raw = changesOf(
      tx
        .delete(metricSamples)
        .where(lt(metricSamples.t, now - rawHours * 3600 * US))
        .run(),
    )
    const five = changesOf(
      tx
        .delete(metricRollups)
        .where(sql`${metricRollups.grain} = 300 AND ${metricRollups.bucket} < ${now - fiveMinuteDays * 86400 * US}`)
        .run(),
    )
    const hourly = changesOf(
      tx
        .delete(metricRollups)
        .where(sql`${metricRollups.grain} = 3600 AND ${metricRollups.bucket} < ${now - hourlyDays * 86400 * US}`)
        .run(),
    )
    return `removed ${raw} raw samples, ${five} 5-minute and ${hourly} hourly buckets past retention`
  })
}
