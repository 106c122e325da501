import type { DbOrTx } from '../../../db/client'
import { perDeps } from '../../platform/context'
import { ensureSeries, metricNamesOf } from './telemetry.repository'

/**
 * Ingestion of telemetry samples into the raw history, inside the fleet runtime's group commit
 * (one transaction a second for every agent). Series ids are cached per process; ids created in a
 * transaction join the cache only after it commits.
 */
export type SeriesKey = string // `${serverId}|${gpuIndex}|${metric}`

class SeriesCache {
  readonly ids = new Map<SeriesKey, number>()
}

export const seriesCache = perDeps(() => new SeriesCache())

export function seriesId(tx: DbOrTx, cache: SeriesCache, fresh: Map<SeriesKey, number>, serverId: string, gpuIndex: number, metric: string): number {
  const key = `${serverId}|${gpuIndex}|${metric}`
  const known = cache.ids.get(key) ?? fresh.get(key)
  if (known !== undefined) return known
  const id = ensureSeries(tx, serverId, gpuIndex, metric)
  fresh.set(key, id)
  return id
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
  admit(serverId: string, names: Iterable<string>): string[] {
    const known = this.#known(serverId)
    const fresh = [...new Set(names)].filter((n) => !known.has(n))
    if (known.size + fresh.length > MAX_METRIC_NAMES_PER_SERVER) return fresh
    for (const n of fresh) known.add(n)
    return []
  }

  forget(serverId: string): void {
    this.#byServer.delete(serverId)
  }

  #known(serverId: string): Set<string> {
    let known = this.#byServer.get(serverId)
    if (!known) {
      this.#byServer.set(serverId, (known = new Set(metricNamesOf(this.db, serverId))))
    }
    return known
  }
}

export const metricNames = perDeps((deps) => new MetricNames(deps.db))
