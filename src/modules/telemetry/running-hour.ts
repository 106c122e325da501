import { perDeps, type Deps } from '../../platform/context'
import { floorTo, unsettledFrom } from './rollup.service'
import { rawBuckets, rawSamples, watermarkOf, type BucketRow } from './telemetry.repository'

/**
 * The running hour of GET /servers/{id}/metrics (docs/telemetry.md "The running hour"). An hourly
 * bucket not final yet is computed from its raw samples when an answer is built: late in the hour
 * that is up to 360 samples per series, each a table lookup (metric_samples' primary key does not
 * hold `value`), about as long as reading the whole week of stored buckets. Most of those samples
 * no longer change: every sample before the 5-minute watermark (`frozen`, below) was there when
 * the rollup job made those 5-minute buckets final, and a sample written there afterwards (late,
 * or re-sent with another value) lowers that watermark's `redo_from` in the same transaction
 * (noteLateSamples). So the hour's samples before `frozen` are read once per 5-minute watermark
 * row and kept per series as what SQLite's aggregates hold after them (HourPrefix); an answer
 * reads only the samples from `frozen` on (a few minutes) and continues the aggregates with them.
 *
 * The statistics come out the same to the bit as SQLite's own over the whole hour (what the job
 * stores, and what the answer computed before): min, max and last are exact; avg continues
 * SQLite's Kahan-Babuška-Neumaier sum over the values in `t` order (the order the one-bucket
 * statement feeds it, src/modules/telemetry/telemetry.repository.ts) and divides as it does;
 * p50/p95 take the same two ranks of the hour's sorted values and interpolate with SQLite's
 * formula. tests/telemetry/running-hour.test.ts holds this against SQLite's aggregates and against
 * the bytes the service answered before. Why not from the finished 5-minute rollups: a percentile
 * of an hour cannot be made from the percentiles of its 5-minute buckets, and their `avg` with a
 * `samples` count that includes nulls gives back neither the sum nor the order it was made in.
 *
 * SQLite only: on PostgreSQL the aggregate's input order is the plan's (so the float sum is not
 * reproducible), and several instances write; the running hour is computed there as before.
 */
const US = 1_000_000

/** What SQLite's aggregates of one bucket hold after a run of its samples in `t` order. */
export type HourPrefix = {
  /** Samples, nulls included (a bucket with none has no row). */
  samples: number
  /** Non-null values, and their sum as SQLite's sum()/avg() keep it (Kahan-Babuška-Neumaier: sum and error term). */
  n: number
  sum: number
  err: number
  min: number | null
  max: number | null
  /** The value of the latest sample (null when that sample was null). */
  last: number | null
  /** The non-null values, ascending (percentile_cont sorts all of them). */
  sorted: Float64Array
}

const EMPTY: HourPrefix = { samples: 0, n: 0, sum: 0, err: 0, min: null, max: null, last: null, sorted: new Float64Array(0) }

/** One step of SQLite's sum (func.c, kahanBabuskaNeumaierStep), on a copy of the running state. */
function addValue(p: { n: number; sum: number; err: number; min: number | null; max: number | null }, r: number): void {
  p.n++
  const s = p.sum
  const t = s + r
  if (Math.abs(s) > Math.abs(r)) p.err += s - t + r
  else p.err += r - t + s
  p.sum = t
  // min()/max() keep the first of equal values, as SQLite's do (strict comparisons).
  if (p.min === null || r < p.min) p.min = r
  if (p.max === null || r > p.max) p.max = r
}

/**
 * The aggregates after `prefix` continued with `values` (the samples that follow it, in `t` order;
 * null for a sample without a value): [min, max, avg, p50, p95, last], or null when neither has a sample.
 */
export function finishHour(
  prefix: HourPrefix,
  values: (number | null)[],
): [number | null, number | null, number | null, number | null, number | null, number | null] | null {
  const samples = prefix.samples + values.length
  if (samples === 0) return null
  const p = { n: prefix.n, sum: prefix.sum, err: prefix.err, min: prefix.min, max: prefix.max }
  const more: number[] = []
  for (const v of values)
    if (v !== null) {
      addValue(p, v)
      more.push(v)
    }
  const last = values.length ? values[values.length - 1]! : prefix.last
  if (p.n === 0) return [null, null, null, null, null, last]
  // avgFinalize: the error term is added unless it overflowed, then divided by the count.
  const avg = (Number.isFinite(p.err) ? p.sum + p.err : p.sum) / p.n
  more.sort((a, b) => a - b)
  return [p.min, p.max, avg, percentile(prefix.sorted, more, 0.5), percentile(prefix.sorted, more, 0.95), last]
}

/** The aggregates of `values` (in `t` order) to be continued later by finishHour. */
export function startHour(values: (number | null)[]): HourPrefix {
  if (values.length === 0) return EMPTY
  const p = { n: 0, sum: 0, err: 0, min: null as number | null, max: null as number | null }
  const sorted = new Float64Array(values.length)
  for (const v of values)
    if (v !== null) {
      addValue(p, v)
      sorted[p.n - 1] = v
    }
  return { samples: values.length, ...p, last: values[values.length - 1]!, sorted: sorted.subarray(0, p.n).sort() }
}

/** The k-th smallest (from 0) of two ascending lists taken together. */
function kth(a: Float64Array, b: number[], k: number): number {
  let lo = Math.max(0, k + 1 - b.length)
  let hi = Math.min(k + 1, a.length)
  // The number i of elements taken from `a` among the k + 1 smallest.
  while (lo < hi) {
    const i = (lo + hi) >> 1
    if (a[i]! < b[k - i]!) lo = i + 1
    else hi = i
  }
  const i = lo
  const fromA = i > 0 ? a[i - 1]! : Number.NEGATIVE_INFINITY
  const fromB = k + 1 - i > 0 ? b[k - i]! : Number.NEGATIVE_INFINITY
  return Math.max(fromA, fromB)
}

/** SQLite's percentile_cont (percentile.c): rank p × (n − 1) of the sorted values, interpolated linearly between the two around it. */
function percentile(a: Float64Array, b: number[], p: number): number {
  const n = a.length + b.length
  const ix = p * (n - 1)
  const i1 = Math.floor(ix)
  const i2 = ix === i1 || i1 === n - 1 ? i1 : i1 + 1
  const v1 = kth(a, b, i1)
  const v2 = i2 === i1 ? v1 : kth(a, b, i2)
  return v1 + (v2 - v1) * (ix - i1)
}

/**
 * Kept prefixes, per series: made under the 5-minute watermark row `wm` for the samples of
 * [hour, frozen). At most KEPT_MAX_VALUES values in all, least recently used dropped first (a
 * running hour of a series at one sample per 10 s is at most 360).
 */
type Kept = { key: string; prefix: HourPrefix }
const KEPT_MAX_VALUES = 2_000_000

class KeptPrefixes {
  readonly #kept = new Map<number, Kept>()
  #values = 0

  get(seriesId: number, key: string): HourPrefix | undefined {
    const hit = this.#kept.get(seriesId)
    if (!hit || hit.key !== key) return undefined
    this.#kept.delete(seriesId)
    this.#kept.set(seriesId, hit)
    return hit.prefix
  }

  set(seriesId: number, kept: Kept): void {
    const old = this.#kept.get(seriesId)
    if (old) {
      this.#kept.delete(seriesId)
      this.#values -= old.prefix.samples + 1
    }
    this.#kept.set(seriesId, kept)
    this.#values += kept.prefix.samples + 1
    for (const [id, k] of this.#kept) {
      if (this.#values <= KEPT_MAX_VALUES) break
      this.#kept.delete(id)
      this.#values -= k.prefix.samples + 1
    }
  }
}
const keptPrefixes = perDeps(() => new KeptPrefixes())

/** Samples (series, t, value) in series then `t` order, split per series: each series' values in `t` order. */
function valuesBySeries(rows: [number, number, number | null][]): Map<number, (number | null)[]> {
  const out = new Map<number, (number | null)[]>()
  for (const [id, , value] of rows) {
    let list = out.get(id)
    if (!list) out.set(id, (list = []))
    list.push(value)
  }
  return out
}

/**
 * What rawBuckets answers for these series in [fromUs, toUs) (the buckets of `grain` not final yet,
 * from their raw samples), the same rows to the bit; for the one hourly bucket of an answer's
 * running hour, from the kept prefix and the samples after it.
 */
export async function unsettledBuckets(deps: Deps, grain: 300 | 3600, seriesIds: number[], fromUs: number, toUs: number, now: number): Promise<BucketRow[]> {
  const hour = 3600 * US
  if (grain !== 3600 || seriesIds.length === 0 || toUs - fromUs !== hour || fromUs % hour !== 0)
    return await rawBuckets(deps.db, grain, seriesIds, fromUs, toUs)
  const wm = await watermarkOf(deps.db, 300)
  // Samples before `frozen` change only with the 5-minute watermark row (see above).
  const frozen = wm ? Math.min(floorTo(unsettledFrom(deps, 300, wm, now), 300), toUs) : fromUs
  if (frozen <= fromUs) return await rawBuckets(deps.db, grain, seriesIds, fromUs, toUs)
  const key = `${wm!.doneUntil}|${wm!.redoFrom}|${wm!.updatedAt}|${fromUs}|${frozen}`
  const kept = keptPrefixes(deps)
  const prefixes = new Map<number, HourPrefix>()
  const missing: number[] = []
  for (const id of seriesIds) {
    const p = kept.get(id, key)
    if (p) prefixes.set(id, p)
    else missing.push(id)
  }
  if (missing.length) {
    const rows = await rawSamples(deps.db, missing, fromUs, frozen)
    if (rows === null) return await rawBuckets(deps.db, grain, seriesIds, fromUs, toUs)
    const bySeries = valuesBySeries(rows)
    for (const id of missing) {
      const prefix = startHour(bySeries.get(id) ?? [])
      kept.set(id, { key, prefix })
      prefixes.set(id, prefix)
    }
  }
  const rest = await rawSamples(deps.db, seriesIds, frozen, toUs)
  if (rest === null) return await rawBuckets(deps.db, grain, seriesIds, fromUs, toUs)
  const after = valuesBySeries(rest)
  const out: BucketRow[] = []
  for (const id of seriesIds) {
    const stats = finishHour(prefixes.get(id)!, after.get(id) ?? [])
    if (stats) out.push([id, fromUs, ...stats])
  }
  return out
}
