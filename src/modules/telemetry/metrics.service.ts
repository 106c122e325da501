import type { Static } from '@sinclair/typebox'
import type { Actor } from '../../platform/access'
import { formatDecimal, formatSignificant } from '../../platform/numbers'
import { perDeps, type Deps } from '../../platform/context'
import { invalidField } from '../../platform/domain-error'
import { formatTimestamp, parseTimestamp } from '../../platform/time'
import { DEFAULT_METRICS, type MetricsQuery } from './metrics.model'
import { floorTo, unsettledFrom } from './rollup.service'
import { unsettledBuckets } from './running-hour'
import { seriesOf, storedBuckets, watermarkOf, type BucketRow, type Watermark } from './telemetry.repository'

/**
 * GET /servers/{id}/metrics (docs/telemetry.md): default
 * range the last 24 h; auto resolution 5m, or 1h for ranges over 48 h (which always read hourly
 * rollups); 1m is a legacy alias of 5m. Every bucket of the range is a point, half-open
 * [t, t + resolution), with nulls where nothing was measured. Buckets the rollup job has not
 * made final yet (from its watermark on) are computed from the raw samples at read time, so a new
 * server's first samples show without waiting for the job. Hot answers are cached 60 s,
 * historical ones an hour; the text of final buckets is kept per series between answers (KeptTexts).
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

/**
 * A value as its JSON text, rounded for its unit (`decimals` undefined: 12 significant digits),
 * halves away from zero and never -0. An answer formats hundreds of thousands of values, mostly
 * the same few thousand: the text of each rounded magnitude is kept once made.
 */
const MEMO_LIMIT = 1 << 17
const memo: string[][] = [[], [], []]

function formatValue(value: number | null | undefined, decimals: number | undefined): string {
  if (value === null || value === undefined) return 'null'
  // Through the one number formatter (src/platform/numbers.ts): never exponent notation, null for a non-finite value.
  if (decimals === undefined) return formatSignificant(value, 12) ?? 'null'
  const f = 10 ** decimals
  const k = Math.round(Math.abs(value) * f)
  if (k === 0) return '0'
  if (k >= MEMO_LIMIT || decimals > 2) return formatDecimal(value, decimals) ?? 'null'
  const texts = memo[decimals]!
  const text = texts[k] ?? (texts[k] = formatDecimal(k / f, decimals)!)
  return value < 0 ? `-${text}` : text
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
export type ServerScope = (deps: Deps, actor: Actor, id: string) => Promise<string>

/** The answer as sent: its JSON text (a metrics snapshot, checked against the schema by the tests), ETag and cache expiry. */
export type Answer = { json: string; etag: string; expiresAt: number }

/**
 * Answers cached per query, oldest first out: at most MAX_CACHED_BYTES of JSON text in all (an
 * answer of 48 hours at 5 minutes for 43 series is about 2.4 MB), expired ones dropped on the way.
 */
const MAX_CACHED_BYTES = 64 * 1024 * 1024
class AnswerCache {
  readonly #answers = new Map<string, Answer>()
  #bytes = 0

  get(key: string, now: number): Answer | undefined {
    const hit = this.#answers.get(key)
    if (!hit) return undefined
    if (hit.expiresAt > now) return hit
    this.#drop(key, hit)
    return undefined
  }

  set(key: string, answer: Answer, now: number): void {
    const old = this.#answers.get(key)
    if (old) this.#drop(key, old)
    for (const [k, a] of this.#answers) {
      if (this.#bytes + answer.json.length <= MAX_CACHED_BYTES && a.expiresAt > now) break
      this.#drop(k, a)
    }
    if (answer.json.length > MAX_CACHED_BYTES) return
    this.#answers.set(key, answer)
    this.#bytes += answer.json.length
  }

  #drop(key: string, answer: Answer): void {
    this.#answers.delete(key)
    this.#bytes -= answer.json.length
  }
}
const answerCache = perDeps(() => new AnswerCache())

export async function serverMetrics({
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
}): Promise<Answer> {
  const serverId = await visibleServer(deps, actor, id)
  const now = deps.clock.nowUs()
  const key = JSON.stringify([serverId, input.from ?? null, input.to ?? null, input.resolution ?? 'auto', input.metric ?? null, input.gpu_index ?? null])
  const cache = answerCache(deps)
  const hit = cache.get(key, now)
  if (hit) return hit

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
  const series = (await seriesOf(deps.db, serverId, metrics))
    .filter((s) => s.gpuIndex < 0 || input.gpu_index === undefined || s.gpuIndex === input.gpu_index)
    .sort((a, b) => metrics.indexOf(a.metric) - metrics.indexOf(b.metric) || a.gpuIndex - b.gpuIndex)
  if (series.length > MAX_SERIES)
    throw invalidField(
      'telemetry',
      '/metric',
      'too_many_series',
      `at most ${MAX_SERIES} series; this selection has ${series.length} (restrict gpu_index or metric)`,
    )

  const ids = series.map((s) => s.id)
  const step = resolution * US
  const rangeEnd = first + points * step
  const wm = await watermarkOf(deps.db, resolution)
  // The buckets not final yet (all of them before the job's first run) come from the raw samples,
  // whole buckets as the job would store them; they replace any stored row of the same bucket.
  const rawFrom = Math.max(first, wm ? floorTo(unsettledFrom(deps, resolution, wm, now), resolution) : first)
  // Final buckets no retention run can have reached yet: their text may come from an earlier answer.
  const [keptFrom, keptTo] = wm ? keepableWindow(deps, resolution, first, Math.min(rawFrom, rangeEnd), now) : [first, first]
  const kept = await settledTexts(deps, { series, grain: resolution, wm, from: keptFrom, to: keptTo })
  // The rest as before: stored rows, then the raw samples' buckets over them.
  const before = new BucketGrid(series, first, step, (keptFrom - first) / step)
  const after = new BucketGrid(series, keptTo, step, (rangeEnd - keptTo) / step)
  before.put(await storedBuckets(deps.db, ids, resolution, first, keptFrom))
  after.put(await storedBuckets(deps.db, ids, resolution, keptTo, to))
  const raw = await unsettledBuckets(deps, resolution, ids, rawFrom, rangeEnd, now)
  before.put(raw)
  after.put(raw)
  // Read from the raw samples up to the range's end, the answer is as fresh as this moment.
  const dataAsOf = rawFrom < rangeEnd ? now : (wm?.updatedAt ?? now)
  const head = `"server_id":${JSON.stringify(serverId)},"resolution":"${resolution === 300 ? '5m' : '1h'}","from":"${formatTimestamp(from)}","to":"${formatTimestamp(to)}","series":`
  const body = seriesJson(series, [before, kept, after])
  const etag = `"${Bun.hash(head).toString(36)}-${Bun.hash(body).toString(36)}"`
  const envelope = `{"generated_at":"${formatTimestamp(now)}","data_as_of":"${formatTimestamp(Math.min(dataAsOf, now))}","version":1,"stale":false,"stale_reason":null,`
  const hot = to > (wm?.doneUntil ?? 0)
  const answer = { json: `${envelope}${head}${body}}`, etag, expiresAt: now + (hot ? HOT_TTL_US : HISTORY_TTL_US) }
  cache.set(key, answer, now)
  return answer
}

const STATS = 6 // min, max, avg, p50, p95, last

/** A part of every series' points as JSON text: the points of one run of buckets, joined by commas ('' for none). */
type PointTexts = { text(row: number): string }

/** The answer's series as JSON text, each series' points taken from `parts` in turn (consecutive runs of buckets). */
function seriesJson(series: { gpuIndex: number; metric: string }[], parts: PointTexts[]): string {
  const out: string[] = []
  series.forEach((s, row) => {
    const unit = unitOf(s.metric)
    const host = s.gpuIndex < 0
    out.push(
      `${row ? ',' : '['}{"metric":"${s.metric}","scope":"${host ? 'host' : 'gpu'}","gpu_index":${host ? 'null' : s.gpuIndex},"unit":${unit === null ? 'null' : `"${unit}"`},"points":[`,
    )
    let any = false
    for (const part of parts) {
      const text = part.text(row)
      if (!text) continue
      if (any) out.push(',')
      out.push(text)
      any = true
    }
    out.push(']}')
  })
  out.push(series.length ? ']' : '[]')
  return out.join('')
}

/** The rounding of a series' values on the wire (see DECIMALS). */
const decimalsOf = (metric: string): number | undefined => {
  const unit = unitOf(metric)
  return unit === null ? undefined : DECIMALS[unit]
}

/**
 * Numbers of a run of buckets in one flat array, series by series, point by point, six statistics
 * each (null where nothing was measured), written straight from the rows read; then their JSON
 * text, with each bucket's `t` formatted once for every series.
 */
class BucketGrid implements PointTexts {
  readonly #row = new Map<number, number>()
  readonly #cells: (number | null)[]
  readonly #decimals: (number | undefined)[]
  #opening: string[] | undefined

  constructor(
    series: { id: number; metric: string }[],
    private readonly first: number,
    private readonly step: number,
    private readonly points: number,
  ) {
    series.forEach((s, i) => {
      this.#row.set(s.id, i)
    })
    this.#decimals = series.map((s) => decimalsOf(s.metric))
    this.#cells = new Array<number | null>(series.length * points * STATS).fill(null)
  }

  put(rows: BucketRow[]): void {
    if (this.points === 0) return
    const cells = this.#cells
    for (const r of rows) {
      const i = (r[1] - this.first) / this.step
      const row = this.#row.get(r[0])
      if (row === undefined || !(i >= 0 && i < this.points) || !Number.isInteger(i)) continue
      const at = (row * this.points + i) * STATS
      cells[at] = r[2]
      cells[at + 1] = r[3]
      cells[at + 2] = r[4]
      cells[at + 3] = r[5]
      cells[at + 4] = r[6]
      cells[at + 5] = r[7]
    }
  }

  /** Each point's JSON text of the series in `row`, from bucket `from` (an index) on. */
  pointTexts(row: number, from = 0): string[] {
    const { points } = this
    this.#opening ??= Array.from({ length: points }, (_, i) => `{"t":"${formatTimestamp(this.first + i * this.step)}","min":`)
    const opening = this.#opening
    const cells = this.#cells
    const d = this.#decimals[row]
    const out = new Array<string>(points - from)
    for (let i = from; i < points; i++) {
      const at = (row * points + i) * STATS
      out[i - from] =
        `${opening[i]}${formatValue(cells[at], d)},"max":${formatValue(cells[at + 1], d)},"avg":${formatValue(cells[at + 2], d)},"p50":${formatValue(cells[at + 3], d)},"p95":${formatValue(cells[at + 4], d)},"last":${formatValue(cells[at + 5], d)}}`
    }
    return out
  }

  text(row: number): string {
    return this.points === 0 ? '' : this.pointTexts(row).join(',')
  }
}

/**
 * The JSON text of a series' final buckets, kept from one answer for the next (most answers are
 * the same few ranges of the same servers, polled): the points of [from, from + ends.length ×
 * grain), joined by commas, `ends[i]` where point i's text ends. Stored rollups before the
 * watermark change only when the rollup job runs (a late sample's redo included) or retention
 * deletes them, so a kept text holds while the grain's watermark row is the one it was made under
 * (`wm`: every run and every late sample rewrites that row, on any instance) and only for buckets
 * no retention run can have reached (keepableWindow). At most KEPT_MAX_BYTES in all, least
 * recently used dropped first.
 */
type Kept = { wm: string; from: number; text: string; ends: number[] }
const KEPT_MAX_BYTES = 64 * 1024 * 1024
const keptSize = (k: Kept) => k.text.length + 8 * k.ends.length

class KeptTexts {
  readonly #kept = new Map<string, Kept>()
  #bytes = 0

  get(key: string): Kept | undefined {
    const hit = this.#kept.get(key)
    if (hit) {
      this.#kept.delete(key)
      this.#kept.set(key, hit)
    }
    return hit
  }

  set(key: string, kept: Kept): void {
    const old = this.#kept.get(key)
    if (old) {
      this.#kept.delete(key)
      this.#bytes -= keptSize(old)
    }
    if (keptSize(kept) > KEPT_MAX_BYTES / 4) return
    this.#kept.set(key, kept)
    this.#bytes += keptSize(kept)
    for (const [k, v] of this.#kept) {
      if (this.#bytes <= KEPT_MAX_BYTES) break
      this.#kept.delete(k)
      this.#bytes -= keptSize(v)
    }
  }
}
const keptTexts = perDeps(() => new KeptTexts())

/** Points [i, j) of a kept text (0 ≤ i < j ≤ its points). */
function keptSlice(k: Kept, i: number, j: number): string {
  return k.text.slice(i === 0 ? 0 : k.ends[i - 1]! + 1, k.ends[j - 1])
}

/** A day: how far another instance's clock may be ahead when metrics.prune runs there. */
const PRUNE_MARGIN_US = 24 * 3600 * US

/**
 * The buckets [first, end) of a range whose text may be kept: metrics.prune deletes buckets older
 * than its `now` less the grain's retention, so a bucket within that (less PRUNE_MARGIN_US) is
 * still stored as the rollup job left it; older ones are read every time. Empty: [first, first).
 */
function keepableWindow(deps: Deps, grain: 300 | 3600, first: number, end: number, now: number): [number, number] {
  const { fiveMinuteDays, hourlyDays } = deps.config.metricsRetention
  const step = grain * US
  const oldest = Math.ceil((now - (grain === 300 ? fiveMinuteDays : hourlyDays) * 86400 * US + PRUNE_MARGIN_US) / step) * step
  const from = Math.max(first, oldest)
  return from < end ? [from, end] : [first, first]
}

/**
 * The points of [from, to) (final buckets, see keepableWindow) of each series as JSON text: kept
 * texts where they cover it, otherwise read from the stored rollups (only past a kept text's end
 * when it covers the start) and kept for the next answer.
 */
async function settledTexts(
  deps: Deps,
  { series, grain, wm, from, to }: { series: { id: number; metric: string }[]; grain: 300 | 3600; wm: Watermark | undefined; from: number; to: number },
): Promise<PointTexts> {
  if (!wm || from >= to) return { text: () => '' }
  const step = grain * US
  const key = `${wm.doneUntil}|${wm.redoFrom}|${wm.updatedAt}`
  const cache = keptTexts(deps)
  const texts: string[] = new Array(series.length)
  const reads: { row: number; start: number; old: Kept | undefined }[] = []
  series.forEach((s, row) => {
    const k = cache.get(`${grain}:${s.id}`)
    if (k && k.wm === key && k.from <= from) {
      const end = k.from + k.ends.length * step
      if (end >= to) texts[row] = keptSlice(k, (from - k.from) / step, (to - k.from) / step)
      else if (end > from) reads.push({ row, start: end, old: k })
      else reads.push({ row, start: from, old: undefined })
    } else reads.push({ row, start: from, old: undefined })
  })
  if (reads.length) {
    const readFrom = Math.min(...reads.map((r) => r.start))
    const readSeries = reads.map((r) => series[r.row]!)
    const grid = new BucketGrid(readSeries, readFrom, step, (to - readFrom) / step)
    grid.put(
      await storedBuckets(
        deps.db,
        readSeries.map((s) => s.id),
        grain,
        readFrom,
        to,
      ),
    )
    reads.forEach((r, i) => {
      const fresh = grid.pointTexts(i, (r.start - readFrom) / step)
      let text: string
      let ends: number[]
      if (r.old && r.start > from) {
        // What was kept from `from` on, then the buckets read past its end.
        const skip = (from - r.old.from) / step
        const kept = keptSlice(r.old, skip, r.old.ends.length)
        const shift = skip === 0 ? 0 : r.old.ends[skip - 1]! + 1
        ends = r.old.ends.slice(skip).map((e) => e - shift)
        text = kept
        for (const p of fresh) {
          text += `,${p}`
          ends.push(text.length)
        }
      } else {
        ends = new Array<number>(fresh.length)
        let at = -1
        fresh.forEach((p, n) => {
          at += p.length + 1
          ends[n] = at
        })
        text = fresh.join(',')
      }
      cache.set(`${grain}:${series[r.row]!.id}`, { wm: key, from, text, ends })
      texts[r.row] = text
    })
  }
  return { text: (row) => texts[row]! }
}
