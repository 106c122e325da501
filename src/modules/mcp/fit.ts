/**
 * Fitting a tool's answer into one reply (docs/ai-access.md "Answers"): the answer stays valid JSON
 * (and `structuredContent`), under the gateway's character budget, and says in `truncated` what
 * was left out and how to ask for it, instead of being cut mid-text.
 */

type Json = Record<string, unknown>

const size = (v: unknown) => JSON.stringify(v).length

/** The largest n in [lo, hi] for which ok(n) holds (ok is monotone: true up to some n); lo - 1 when none. */
function largest(lo: number, hi: number, ok: (n: number) => boolean): number {
  let best = lo - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if (ok(mid)) {
      best = mid
      lo = mid + 1
    } else hi = mid - 1
  }
  return best
}

/**
 * The default: the answer as it is when it fits; otherwise its largest top-level list keeps its
 * first items (the newest, for the API's lists) and `truncated` names the rest.
 */
export function fitByLargestList(answer: Json, budget: number): Json | null {
  if (size(answer) <= budget) return answer
  let key: string | null = null
  for (const [k, v] of Object.entries(answer)) if (Array.isArray(v) && (key === null || size(v) > size(answer[key]))) key = k
  if (key === null) return null
  const list = answer[key] as unknown[]
  const shaped = (n: number): Json => ({
    ...answer,
    [key]: list.slice(0, n),
    truncated: {
      list: key,
      shown: n,
      of: list.length,
      left_out: `the last ${list.length - n} of ${list.length} items of "${key}", too large for one reply`,
      narrow: 'ask again with a smaller limit or a filter',
    },
  })
  const n = largest(0, list.length, (k) => size(shaped(k)) <= budget)
  return n < 0 ? null : shaped(n)
}

type Point = Record<string, unknown> & { t: string }
type Series = Record<string, unknown> & { metric: string; gpu_index: number | null; points: Point[] }

/**
 * metrics.query: each point keeps `t` and the statistics asked for (default avg and max); when the
 * answer is still too large, every series keeps its newest points (the same number for all), and
 * when even one point each is too many, the last series go. `truncated` says which.
 */
export function fitMetrics(answer: Json, budget: number, args: Json): Json | null {
  const stats = (args.stats as string[] | undefined) ?? ['avg', 'max']
  const series = ((answer.series as Series[] | undefined) ?? []).map((s) => ({
    ...s,
    points: s.points.map((p) => Object.fromEntries([['t', p.t], ...stats.map((k) => [k, p[k] ?? null])]) as Point),
  }))
  const whole = { ...answer, stats, series }
  if (size(whole) <= budget) return whole
  const most = Math.max(0, ...series.map((s) => s.points.length))
  const narrow = 'ask for fewer metrics, one gpu_index, fewer hours, or resolution 1h'
  const newest = (k: number): Json => {
    const kept = series.map((s) => ({ ...s, points: s.points.slice(Math.max(0, s.points.length - k)) }))
    const firstKept =
      kept
        .map((s) => s.points[0]?.t)
        .filter((t): t is string => !!t)
        .sort()[0] ?? null
    return {
      ...answer,
      stats,
      series: kept,
      truncated: {
        left_out: `points before ${firstKept ?? 'the last'} in every series: ${k} of ${most} points per series shown, the newest`,
        points_shown_per_series: k,
        points_per_series: most,
        narrow,
      },
    }
  }
  const k = largest(1, most, (n) => size(newest(n)) <= budget)
  if (k >= 1) return newest(k)
  // Even one point per series is too much: the last series go, the rest keep their newest point.
  const lastOnly = (newest(1).series as Series[]) ?? []
  const fewer = (n: number): Json => ({
    ...answer,
    stats,
    series: lastOnly.slice(0, n),
    truncated: {
      left_out: `only the newest point of each series, and the series after the first ${n} of ${lastOnly.length}: ${lastOnly
        .slice(n)
        .map((s) => `${s.metric}${s.gpu_index === null ? '' : `[gpu ${s.gpu_index}]`}`)
        .join(', ')
        .slice(0, 400)}`,
      narrow,
    },
  })
  const n = largest(0, lastOnly.length, (m) => size(fewer(m)) <= budget)
  return n < 0 ? null : fewer(n)
}
