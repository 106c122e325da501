import { and, eq, sql } from 'drizzle-orm'
import type { Database } from 'bun:sqlite'
import { metricSeries, rollupWatermarks } from '../../../db/schema'
import type { DbOrTx } from '../../../db/client'
import { perDeps, } from '../../platform/context'

/**
 * Ingestion of telemetry samples into the raw history, inside the fleet runtime's group commit
 * (one transaction a second for every agent). Series ids are cached per process; ids created in a
 * transaction join the cache only after it commits.
 */
export type SeriesKey = string // `${serverId}|${gpuIndex}|${metric}`

export class SeriesCache {
  readonly ids = new Map<SeriesKey, number>()
}

export const seriesCache = perDeps(() => new SeriesCache())

export function seriesId(tx: DbOrTx, cache: SeriesCache, fresh: Map<SeriesKey, number>, serverId: string, gpuIndex: number, metric: string): number {
  const key = `${serverId}|${gpuIndex}|${metric}`
  const known = cache.ids.get(key) ?? fresh.get(key)
  if (known !== undefined) return known
  tx.insert(metricSeries).values({ serverId, gpuIndex, metric }).onConflictDoNothing().run()
  const row = tx
    .select({ id: metricSeries.id })
    .from(metricSeries)
    .where(and(eq(metricSeries.serverId, serverId), eq(metricSeries.gpuIndex, gpuIndex), eq(metricSeries.metric, metric)))
    .get()!
  fresh.set(key, row.id)
  return row.id
}

/**
 * Raw samples, hundreds of thousands a minute on a large fleet: multi-row INSERTs of up to 100
 * rows through statements prepared once on the connection the open transaction uses (the query
 * builder costs about a hundred times more per row than the insert itself). A repeated sample
 * (same series and instant, e.g. re-sent after a reconnect) keeps the newer value.
 */
const CHUNK = 100
const insertSql = (rows: number) =>
  `INSERT INTO metric_samples (series_id, t, value) VALUES ${Array(rows).fill('(?, ?, ?)').join(', ')} ON CONFLICT (series_id, t) DO UPDATE SET value = excluded.value`

export function insertSamples(sqlite: Database, rows: (number | null)[][]): void {
  let i = 0
  for (; i + CHUNK <= rows.length; i += CHUNK) sqlite.query(insertSql(CHUNK)).run(...rows.slice(i, i + CHUNK).flat())
  if (i < rows.length) sqlite.query(insertSql(rows.length - i)).run(...rows.slice(i).flat())
}

/** Samples for time already rolled up make the rollup job redo from their bucket. */
export function noteLateSamples(tx: DbOrTx, earliestT: number, now: number): void {
  tx.update(rollupWatermarks)
    .set({ redoFrom: sql`min(coalesce(${rollupWatermarks.redoFrom}, ${earliestT}), ${earliestT})`, updatedAt: now })
    .where(sql`${rollupWatermarks.doneUntil} > ${earliestT}`)
    .run()
}

/**
 * At most MAX_METRIC_NAMES_PER_SERVER distinct metric names per server (whatever GPU reports
 * them): a name matching the pattern is stored as a new series, so an agent inventing names
 * would grow the series table without bound. Known names are always accepted; a frame bringing
 * a name past the cap is refused whole. Names are loaded from the stored series on a server's
 * first frame in this process and forgotten when its session ends.
 */
export const MAX_METRIC_NAMES_PER_SERVER = 256

export class MetricNames {
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
      const rows = this.db.selectDistinct({ metric: metricSeries.metric }).from(metricSeries).where(eq(metricSeries.serverId, serverId)).all()
      this.#byServer.set(serverId, (known = new Set(rows.map((r) => r.metric))))
    }
    return known
  }
}

export const metricNames = perDeps((deps) => new MetricNames(deps.db))
