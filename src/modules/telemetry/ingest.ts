import type { DbOrTx } from '../../../db/client'
import { perDeps, type Deps } from '../../platform/context'
import { noteSamplesWritten } from './rollup.service'
import { createSeries, metricNamesOf, sampleInsert, seriesOfServer } from './telemetry.repository'

/**
 * Ingestion of telemetry samples into the raw history, inside the fleet runtime's group commit.
 * Series ids are cached per process; ids created or read in a transaction join the cache only
 * after it commits (`fresh`, which the caller merges).
 */
export type SeriesKey = string // `${serverId}|${gpuIndex}|${metric}`

class SeriesCache {
  readonly ids = new Map<SeriesKey, number>()
}

export const seriesCache = perDeps(() => new SeriesCache())

/** What the group commit keeps of a server's telemetry frame. */
export type TelemetrySample = { t: number; gpuIndex: number; values: Record<string, number | null> }

/** The latest value of one series in what was written, for the fleet's latest-metric rows. */
export type LatestValue = { serverId: string; gpuIndex: number; metric: string; value: number | null; t: number }

/**
 * Writes the buffered samples of every server, series by series (the primary key's order), and
 * answers the earliest instant written (for late samples) and the latest value of each series.
 * A server whose series are not all cached has its stored series read once; the rest are made.
 * A rollup run under way hears of the earliest instant written (it may have passed it already).
 */
export async function storeSamples(
  deps: Deps,
  cache: SeriesCache,
  fresh: Map<SeriesKey, number>,
  samples: [string, TelemetrySample[]][],
): Promise<{ earliest: number; latest: LatestValue[] }> {
  const insert = sampleInsert(deps.db)
  let earliest = Number.POSITIVE_INFINITY
  const latest: LatestValue[] = []
  for (const [serverId, list] of samples) {
    let loaded = false
    const idOf = async (gpuIndex: number, metric: string): Promise<number> => {
      const key = `${serverId}|${gpuIndex}|${metric}`
      const known = cache.ids.get(key) ?? fresh.get(key)
      if (known !== undefined) return known
      if (!loaded) {
        loaded = true
        for (const [g, m, id] of await seriesOfServer(deps.db, serverId)) fresh.set(`${serverId}|${g}|${m}`, id)
        const stored = fresh.get(key)
        if (stored !== undefined) return stored
      }
      const id = await createSeries(deps.db, serverId, gpuIndex, metric)
      fresh.set(key, id)
      return id
    }
    // Per series: its (t, value) pairs in arrival order, and its latest value.
    const bySeries = new Map<number, { pairs: (number | null)[]; last: LatestValue }>()
    for (const s of list) {
      if (s.t < earliest) earliest = s.t
      for (const metric in s.values) {
        const value = s.values[metric] as number | null
        const id = await idOf(s.gpuIndex, metric)
        const series = bySeries.get(id)
        if (!series) bySeries.set(id, { pairs: [s.t, value], last: { serverId, gpuIndex: s.gpuIndex, metric, value, t: s.t } })
        else {
          series.pairs.push(s.t, value)
          if (s.t >= series.last.t) {
            series.last.t = s.t
            series.last.value = value
          }
        }
      }
    }
    for (const id of [...bySeries.keys()].sort((a, b) => a - b)) {
      const { pairs, last } = bySeries.get(id)!
      for (let i = 0; i < pairs.length; i += 2) await insert.add(id, pairs[i]!, pairs[i + 1]!)
      latest.push(last)
    }
  }
  await insert.flush()
  noteSamplesWritten(deps, earliest)
  return { earliest, latest }
}

/**
 * At most MAX_METRIC_NAMES_PER_SERVER distinct metric names per server (whatever GPU reports
 * them): a name matching the pattern is stored as a new series, so an agent inventing names
 * would grow the series table without bound. Known names are always accepted; a frame bringing
 * a name past the cap is refused whole. Names are loaded from the stored series on a server's
 * first frame in this process and forgotten when its session ends.
 */
export const MAX_METRIC_NAMES_PER_SERVER = 256

class MetricNames {
  readonly #byServer = new Map<string, Set<string>>()
  constructor(private readonly db: DbOrTx) {}

  /** Admits the names, or admits none and answers those that would pass the cap. */
  async admit(serverId: string, names: Iterable<string>): Promise<string[]> {
    const known = await this.#known(serverId)
    // From here to the end no await: the check and the admission see the same set.
    const fresh = [...new Set(names)].filter((n) => !known.has(n))
    if (known.size + fresh.length > MAX_METRIC_NAMES_PER_SERVER) return fresh
    for (const n of fresh) known.add(n)
    return []
  }

  forget(serverId: string): void {
    this.#byServer.delete(serverId)
  }

  async #known(serverId: string): Promise<Set<string>> {
    const cached = this.#byServer.get(serverId)
    if (cached) return cached
    const stored = await metricNamesOf(this.db, serverId)
    // Another frame of the server may have loaded the set (and admitted names to it) during the
    // read: that set is kept, not replaced by this one.
    let known = this.#byServer.get(serverId)
    if (!known) this.#byServer.set(serverId, (known = new Set(stored)))
    return known
  }
}

export const metricNames = perDeps((deps) => new MetricNames(deps.db))
