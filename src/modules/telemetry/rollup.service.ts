import { withTransaction } from '../../../db/client'
import { perDeps, type Deps } from '../../platform/context'
import {
  allSeriesIds,
  deleteRollupsBefore,
  deleteSamplesBefore,
  earliestSampleAt,
  rollupRange,
  saveWatermark,
  watermarkOf,
  type Watermark,
} from './telemetry.repository'

/**
 * The `metrics.rollup` job: raw samples → 5-minute and hourly buckets with min, max, avg, p50, p95
 * and last (SQLite's percentile_cont, linear interpolation). Each run recomputes every bucket from
 * the watermark (or from a late sample's bucket) up to now, the running bucket included; a
 * recomputation writes the same numbers, so running it twice changes nothing, and after downtime
 * it catches up from where it stopped (as far back as raw samples are kept).
 *
 * It works in slices (docs/telemetry.md "Slices"): a span of buckets at a time, and within it a
 * batch of series per transaction, the batch grown or shrunk so a transaction takes about
 * SLICE_MS; the event loop is yielded between slices, so a request waits at most one slice. The
 * watermark moves when every series of a span is done: a run that stops half-way redoes at most
 * that span. Samples written while a run is under way (the group commit does not wait for it) may
 * land in buckets it has already computed: their earliest instant becomes the watermark's redo
 * point, so the next run computes those buckets again.
 */
const GRAINS = [300, 3600] as const
export type Grain = (typeof GRAINS)[number]
const US = 1_000_000
/** Buckets per span: 6 h of 5-minute buckets, a day of hourly ones. */
const CHUNK_BUCKETS = { 300: 72, 3600: 24 } as const
/** What one transaction of a bulk job aims at, and the most it should take. */
const SLICE_MS = 25
const SLICE_MAX_MS = 50

export const floorTo = (us: number, grainS: number) => Math.floor(us / (grainS * US)) * grainS * US

/** Lets pending requests and frames run between two slices. */
const yieldLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

/** The next batch size after a slice of `size` took `ms`: doubled while well under SLICE_MS, halved past SLICE_MAX_MS. */
function nextBatch(size: number, ms: number, min: number, max: number): number {
  if (ms < SLICE_MS / 2) return Math.min(max, size * 2)
  if (ms > SLICE_MAX_MS) return Math.max(min, Math.floor(size / 2))
  return size
}

/** The earliest sample written while a rollup run is under way in this process (see above). */
class RollupRun {
  running = false
  lateFrom = Number.POSITIVE_INFINITY
}
const rollupRun = perDeps(() => new RollupRun())

/** Called by the group commit with the earliest instant of what it wrote. */
export function noteSamplesWritten(deps: Deps, earliestT: number): void {
  const run = rollupRun(deps)
  if (run.running && earliestT < run.lateFrom) run.lateFrom = earliestT
}

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

/**
 * The instant before which every hourly bucket is final: computed by a finished run (before the
 * watermark, and before any redo a late sample asked for) and older than the raw history, so no
 * late sample can change it any more. 0 while nothing is (no run yet). What is stored from those
 * buckets (the reports' daily aggregates) never needs computing again.
 */
export async function settledHourlyUntil(deps: Deps): Promise<number> {
  const wm = await watermarkOf(deps.db, 3600)
  if (!wm) return 0
  const now = deps.clock.nowUs()
  const rawStart = now - deps.config.metricsRetention.rawHours * 3600 * US
  return Math.max(0, Math.min(unsettledFrom(deps, 3600, wm, now), floorTo(rawStart, 3600)))
}

/** Batch sizes the rollup starts from and keeps within (series per transaction). */
const SERIES_BATCH = { first: 64, min: 1, max: 4096 }

export async function runRollups(deps: Deps): Promise<string> {
  const now = deps.clock.nowUs()
  const run = rollupRun(deps)
  run.running = true
  run.lateFrom = Number.POSITIVE_INFINITY
  try {
    const series = await allSeriesIds(deps.db)
    const parts: string[] = []
    let slices = 0
    let longest = 0
    let batch = SERIES_BATCH.first
    for (const grain of GRAINS) {
      const wm = await watermarkOf(deps.db, grain)
      const from = floorTo(wm ? unsettledFrom(deps, grain, wm, now) : ((await earliestSampleAt(deps.db)) ?? now), grain)
      const end = floorTo(now, grain) + grain * US // the running bucket too
      const completeUntil = floorTo(now, grain)
      const span = CHUNK_BUCKETS[grain] * grain * US
      let buckets = 0
      for (let chunk = from; chunk < end; chunk += span) {
        const chunkEnd = Math.min(end, chunk + span)
        const doneUntil = Math.min(chunkEnd, completeUntil)
        let i = 0
        do {
          const ids = series.slice(i, i + batch)
          i += ids.length
          const last = i >= series.length
          const started = performance.now()
          buckets += await withTransaction(deps.db, async (tx) => {
            const written = ids.length ? await rollupRange(tx, grain, ids, chunk, chunkEnd) : 0
            // Samples written during the run before this point ask for a redo from there.
            if (last) await saveWatermark(tx, grain, doneUntil, run.lateFrom < doneUntil ? run.lateFrom : null, now)
            return written
          })
          const ms = performance.now() - started
          slices++
          longest = Math.max(longest, ms)
          batch = nextBatch(batch, ms, SERIES_BATCH.min, SERIES_BATCH.max)
          await yieldLoop()
        } while (i < series.length)
      }
      parts.push(`${grain === 300 ? '5m' : '1h'}: ${buckets} buckets`)
    }
    return `${parts.join(', ')} in ${slices} transactions (longest ${Math.round(longest)} ms)`
  } finally {
    run.running = false
  }
}

/** Rows deleted per transaction by the retention job: where it starts and the range it adapts within. */
const DELETE_BATCH = { first: 2000, min: 100, max: 100_000 }

/**
 * Retention per grain (configurable); deleting old rows changes nothing newer. Oldest rows first,
 * a batch per transaction sized like the rollup's slices; a run that stops half-way has deleted
 * only what was past retention, and the next one deletes the rest.
 */
export async function pruneTelemetry(deps: Deps): Promise<string> {
  const now = deps.clock.nowUs()
  const { rawHours, fiveMinuteDays, hourlyDays } = deps.config.metricsRetention
  let slices = 0
  let longest = 0
  let batch = DELETE_BATCH.first
  const sliced = async (deleteSome: (limit: number) => Promise<number>): Promise<number> => {
    let total = 0
    for (;;) {
      const started = performance.now()
      const n = await withTransaction(deps.db, () => deleteSome(batch))
      const ms = performance.now() - started
      slices++
      longest = Math.max(longest, ms)
      total += n
      if (n < batch) return total
      batch = nextBatch(batch, ms, DELETE_BATCH.min, DELETE_BATCH.max)
      await yieldLoop()
    }
  }
  const raw = await sliced((limit) => deleteSamplesBefore(deps.db, now - rawHours * 3600 * US, limit))
  const five = await sliced((limit) => deleteRollupsBefore(deps.db, 300, now - fiveMinuteDays * 86400 * US, limit))
  const hourly = await sliced((limit) => deleteRollupsBefore(deps.db, 3600, now - hourlyDays * 86400 * US, limit))
  return `removed ${raw} raw samples, ${five} 5-minute and ${hourly} hourly buckets past retention in ${slices} transactions (longest ${Math.round(longest)} ms)`
}
