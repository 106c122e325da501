import type { Static } from '@sinclair/typebox'
import type { Actor } from '../../platform/access'
import { formatDecimal, formatSignificant } from '../../platform/numbers'
import { perDeps, type Deps } from '../../platform/context'
import { invalidField } from '../../platform/domain-error'
import { formatTimestamp, parseTimestamp } from '../../platform/time'
import { DEFAULT_METRICS, type MetricsQuery } from './metrics.model'
import { floorTo, unsettledFrom } from './rollup.service'
import { rawBuckets, seriesOf, storedBuckets, watermarkOf, type BucketRow } from './telemetry.repository'

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
  const rangeEnd = first + points * resolution * US
  const wm = await watermarkOf(deps.db, resolution)
  // The buckets not final yet (all of them before the job's first run) come from the raw samples,
  // whole buckets as the job would store them; they replace any stored row of the same bucket.
  const rawFrom = Math.max(first, wm ? floorTo(unsettledFrom(deps, resolution, wm, now), resolution) : first)
  const grid = new BucketGrid(ids, first, resolution * US, points)
  grid.put(await storedBuckets(deps.db, ids, resolution, first, to))
  grid.put(await rawBuckets(deps.db, resolution, ids, rawFrom, rangeEnd))
  // Read from the raw samples up to the range's end, the answer is as fresh as this moment.
  const dataAsOf = rawFrom < rangeEnd ? now : (wm?.updatedAt ?? now)
  const head = `"server_id":${JSON.stringify(serverId)},"resolution":"${resolution === 300 ? '5m' : '1h'}","from":"${formatTimestamp(from)}","to":"${formatTimestamp(to)}","series":`
  const body = grid.seriesJson(series)
  const etag = `"${Bun.hash(head).toString(36)}-${Bun.hash(body).toString(36)}"`
  const envelope = `{"generated_at":"${formatTimestamp(now)}","data_as_of":"${formatTimestamp(Math.min(dataAsOf, now))}","version":1,"stale":false,"stale_reason":null,`
  const hot = to > (wm?.doneUntil ?? 0)
  const answer = { json: `${envelope}${head}${body}}`, etag, expiresAt: now + (hot ? HOT_TTL_US : HISTORY_TTL_US) }
  cache.set(key, answer, now)
  return answer
}

const STATS = 6 // min, max, avg, p50, p95, last

/**
 * The answer's numbers in one flat array, series by series, point by point, six statistics each
 * (null where nothing was measured), written straight from the rows read; then its JSON text,
 * built from that array with each bucket's `t` formatted once for every series.
 */
class BucketGrid {
  readonly #row = new Map<number, number>()
  readonly #cells: (number | null)[]

  constructor(
    seriesIds: number[],
    private readonly first: number,
    private readonly step: number,
    private readonly points: number,
  ) {
    seriesIds.forEach((id, i) => {
      this.#row.set(id, i)
    })
    this.#cells = new Array<number | null>(seriesIds.length * points * STATS).fill(null)
  }

  put(rows: BucketRow[]): void {
    const cells = this.#cells
    for (const r of rows) {
      const i = (r[1] - this.first) / this.step
      const row = this.#row.get(r[0])
      if (row === undefined || i < 0 || i >= this.points) continue
      const at = (row * this.points + i) * STATS
      cells[at] = r[2]
      cells[at + 1] = r[3]
      cells[at + 2] = r[4]
      cells[at + 3] = r[5]
      cells[at + 4] = r[6]
      cells[at + 5] = r[7]
    }
  }

  seriesJson(series: { gpuIndex: number; metric: string }[]): string {
    const { points } = this
    const opening = Array.from({ length: points }, (_, i) => `{"t":"${formatTimestamp(this.first + i * this.step)}","min":`)
    const cells = this.#cells
    const parts: string[] = []
    series.forEach((s, row) => {
      const unit = unitOf(s.metric)
      const d = unit === null ? undefined : DECIMALS[unit]
      const host = s.gpuIndex < 0
      parts.push(
        `${row ? ',' : '['}{"metric":"${s.metric}","scope":"${host ? 'host' : 'gpu'}","gpu_index":${host ? 'null' : s.gpuIndex},"unit":${unit === null ? 'null' : `"${unit}"`},"points":[`,
      )
      for (let i = 0; i < points; i++) {
        const at = (row * points + i) * STATS
        parts.push(
          `${i ? ',' : ''}${opening[i]}${formatValue(cells[at], d)},"max":${formatValue(cells[at + 1], d)},"avg":${formatValue(cells[at + 2], d)},"p50":${formatValue(cells[at + 3], d)},"p95":${formatValue(cells[at + 4], d)},"last":${formatValue(cells[at + 5], d)}}`,
        )
      }
      parts.push(']}')
    })
    parts.push(series.length ? ']' : '[]')
    return parts.join('')
  }
}
