import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { deleteRollupsBefore, deleteSamplesBefore, earliestSampleAt, rollupRange, saveWatermark, watermarkOf, type Watermark } from './telemetry.repository'

/**
 * The `metrics.rollup` job: raw samples → 5-minute and hourly buckets with min, max, avg, p50, p95
 * and last (SQLite's percentile_cont, linear interpolation). Each run recomputes every bucket from
 * the watermark (or from a late sample's bucket) up to now, the running bucket included, in chunks;
 * a recomputation writes the same numbers, so running it twice changes nothing, and after downtime
 * it catches up from where it stopped (as far back as raw samples are kept).
 */
const GRAINS = [300, 3600] as const
export type Grain = (typeof GRAINS)[number]
const US = 1_000_000
/** Buckets recomputed per transaction while catching up. */
const CHUNK_BUCKETS = { 300: 72, 3600: 24 } as const

export const floorTo = (us: number, grainS: number) => Math.floor(us / (grainS * US)) * grainS * US

/**
 * Where a grain's stored buckets stop being final: its watermark, or an earlier bucket a late sample
 * asked to redo. A late sample re-rolls only buckets wholly inside the raw history: one that began
 * before it would be recomputed from what is left, its numbers replaced by the late sample's own.
 */
export function unsettledFrom(deps: Deps, grain: Grain, wm: Pick<Watermark, 'doneUntil' | 'redoFrom'>, now: number): number {
  const rawStart = now - deps.config.metricsRetention.rawHours * 3600 * US
  const redo = wm.redoFrom === null ? Number.POSITIVE_INFINITY : Math.max(wm.redoFrom, floorTo(rawStart + grain * US - 1, grain))
  return Math.min(wm.doneUntil, redo)
}

export function runRollups(deps: Deps): string {
  const now = deps.clock.nowUs()
  const parts: string[] = []
  for (const grain of GRAINS) {
    const wm = watermarkOf(deps.db, grain)
    const from = floorTo(wm ? unsettledFrom(deps, grain, wm, now) : (earliestSampleAt(deps.db) ?? now), grain)
    const end = floorTo(now, grain) + grain * US // the running bucket too
    const completeUntil = floorTo(now, grain)
    let buckets = 0
    for (let chunk = from; chunk < end; chunk += CHUNK_BUCKETS[grain] * grain * US) {
      const chunkEnd = Math.min(end, chunk + CHUNK_BUCKETS[grain] * grain * US)
      withTransaction(deps.db, (tx) => {
        buckets += rollupRange(deps.sqlite, grain, chunk, chunkEnd)
        saveWatermark(tx, grain, Math.min(chunkEnd, completeUntil), now)
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
    const raw = deleteSamplesBefore(tx, now - rawHours * 3600 * US)
    const five = deleteRollupsBefore(tx, 300, now - fiveMinuteDays * 86400 * US)
    const hourly = deleteRollupsBefore(tx, 3600, now - hourlyDays * 86400 * US)
    return `removed ${raw} raw samples, ${five} 5-minute and ${hourly} hourly buckets past retention`
  })
}
