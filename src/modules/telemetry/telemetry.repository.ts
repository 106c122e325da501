import { and, eq, gte, inArray, isNotNull, lt, sql } from 'drizzle-orm'
import { metricRollups, metricSamples, metricSeries, rollupWatermarks } from '../../../db/schema/telemetry'
import { isPostgres, rawSql, type DbOrTx } from '../../../db/client'

/** The queries of telemetry's tables: series, raw samples, rollups and the rollup watermarks. */
const US = 1_000_000
const DAY_US = 86_400_000_000

/** Every series of a server as [gpu_index, metric, id]: a server's first samples in a process load them all at once. */
export async function seriesOfServer(db: DbOrTx, serverId: string): Promise<[number, string, number][]> {
  return await rawSql(db).values<[number, string, number]>('SELECT gpu_index, metric, id FROM metric_series WHERE server_id = $1', serverId)
}

/** Makes the series of (server, GPU, metric) and answers its id (the id it has when it exists already). */
export async function createSeries(db: DbOrTx, serverId: string, gpuIndex: number, metric: string): Promise<number> {
  const row = await rawSql(db).values<[number]>(
    `INSERT INTO metric_series (server_id, gpu_index, metric) VALUES ($1, $2, $3)
     ON CONFLICT (server_id, gpu_index, metric) DO UPDATE SET metric = excluded.metric RETURNING id`,
    serverId,
    gpuIndex,
    metric,
  )
  return row[0]![0]
}

/** The distinct metric names a server has series for. */
export async function metricNamesOf(db: DbOrTx, serverId: string): Promise<string[]> {
  return (await db.selectDistinct({ metric: metricSeries.metric }).from(metricSeries).where(eq(metricSeries.serverId, serverId)).all()).map((r) => r.metric)
}

/** A server's series of these metrics (one prepared statement per number of names: every metrics answer asks). */
export async function seriesOf(db: DbOrTx, serverId: string, metrics: string[]): Promise<{ id: number; gpuIndex: number; metric: string }[]> {
  if (metrics.length === 0) return []
  const names = metrics.map((_, i) => `$${i + 2}`).join(', ')
  const rows = await rawSql(db).values<[number, number, string]>(
    `SELECT id, gpu_index, metric FROM metric_series WHERE server_id = $1 AND metric IN (${names})`,
    serverId,
    ...metrics,
  )
  return rows.map(([id, gpuIndex, metric]) => ({ id, gpuIndex, metric }))
}

/** Rows a PostgreSQL batch carries at most per statement. */
const PG_BATCH_ROWS = 5000

/**
 * Raw samples, hundreds of thousands a minute on a large fleet. On SQLite: one statement prepared
 * once on the connection the open transaction uses, run once per row (multi-row INSERTs measured
 * no faster there, and the query builder costs about a hundred times more per row than the insert
 * itself); rows go in fastest in primary-key order, series by series. On PostgreSQL every
 * statement is a round trip, so `add` collects and `flush` writes up to PG_BATCH_ROWS rows per
 * statement, as one JSON document unpacked by the server (passed as text: the driver would encode
 * a parameter it knows to be jsonb a second time). A repeated sample (same series and
 * instant, e.g. re-sent after a reconnect) keeps the newer value. Call `flush` before the
 * transaction ends.
 */
export function sampleInsert(db: DbOrTx): { add: (seriesId: number, t: number, value: number | null) => Promise<void>; flush: () => Promise<void> } {
  if (isPostgres(db)) {
    // One row per (series, instant): PostgreSQL refuses to update a row twice in one statement.
    let rows = new Map<string, [number, number, number | null]>()
    const flush = async () => {
      if (rows.size === 0) return
      const all = [...rows.values()]
      rows = new Map()
      for (let i = 0; i < all.length; i += PG_BATCH_ROWS)
        await rawSql(db).run(
          `INSERT INTO metric_samples (series_id, t, value)
           SELECT x.s, x.t, x.v FROM jsonb_to_recordset(CAST(CAST($1 AS text) AS jsonb)) AS x(s bigint, t bigint, v double precision)
           ON CONFLICT (series_id, t) DO UPDATE SET value = excluded.value`,
          JSON.stringify(all.slice(i, i + PG_BATCH_ROWS).map(([s, t, v]) => ({ s, t, v }))),
        )
    }
    return {
      add: async (seriesId, t, value) => {
        rows.set(`${seriesId}|${t}`, [seriesId, t, value])
        if (rows.size >= PG_BATCH_ROWS) await flush()
      },
      flush,
    }
  }
  const raw = rawSql(db)
  return {
    add: async (seriesId, t, value) => {
      await raw.run(
        'INSERT INTO metric_samples (series_id, t, value) VALUES ($1, $2, $3) ON CONFLICT (series_id, t) DO UPDATE SET value = excluded.value',
        seriesId,
        t,
        value,
      )
    },
    flush: async () => {},
  }
}

/** Samples for time already rolled up make the rollup job redo from their bucket. */
export async function noteLateSamples(tx: DbOrTx, earliestT: number, now: number): Promise<void> {
  await tx
    .update(rollupWatermarks)
    .set({ redoFrom: sql`min(coalesce(${rollupWatermarks.redoFrom}, ${earliestT}), ${earliestT})`, updatedAt: now })
    .where(sql`${rollupWatermarks.doneUntil} > ${earliestT}`)
    .run()
}

export async function earliestSampleAt(db: DbOrTx): Promise<number | null> {
  return (
    (
      await db
        .select({ t: sql<number | null>`min(${metricSamples.t})` })
        .from(metricSamples)
        .get()
    )?.t ?? null
  )
}

export type Watermark = typeof rollupWatermarks.$inferSelect

export async function watermarkOf(db: DbOrTx, grain: number): Promise<Watermark | undefined> {
  return db.select().from(rollupWatermarks).where(eq(rollupWatermarks.grain, grain)).get()
}

export async function saveWatermark(tx: DbOrTx, grain: number, doneUntil: number, redoFrom: number | null, now: number): Promise<void> {
  await tx
    .insert(rollupWatermarks)
    .values({ grain, doneUntil, redoFrom, updatedAt: now })
    .onConflictDoUpdate({ target: rollupWatermarks.grain, set: { doneUntil, redoFrom, updatedAt: now } })
    .run()
}

/** Every series id, ascending: the rollup job works through them a slice at a time. */
export async function allSeriesIds(db: DbOrTx): Promise<number[]> {
  return (await rawSql(db).values<[number]>('SELECT id FROM metric_series ORDER BY id')).map((r) => r[0])
}

/** One bucket as the metrics answer reads it: series id, bucket start, then min, max, avg, p50, p95, last. */
export type BucketRow = [number, number, number | null, number | null, number | null, number | null, number | null, number | null]

/**
 * Stored buckets of these series at `grain` in [fromUs, toUs), as bare rows (`.values()`, no
 * object per row): an answer reads thousands of them. The series go in as one JSON array, so the
 * statement is prepared once whatever their number; each is an index seek on the primary key.
 */
export async function storedBuckets(db: DbOrTx, seriesIds: number[], grain: number, fromUs: number, toUs: number): Promise<BucketRow[]> {
  if (seriesIds.length === 0 || fromUs >= toUs) return []
  return await rawSql(db).values<BucketRow>(
    `SELECT series_id, bucket, min, max, avg, p50, p95, last FROM metric_rollups
     WHERE series_id IN (SELECT value FROM json_each($1)) AND grain = $2 AND bucket >= $3 AND bucket < $4`,
    JSON.stringify(seriesIds),
    grain,
    fromUs,
    toUs,
  )
}

/**
 * The statistics of every bucket of `grain` with raw samples in [$3, $4) of the series in the
 * JSON array $5, one row per series and bucket (an index seek per series on the primary key). The
 * rollup job stores these rows; GET /metrics computes the same rows for the part of a range not
 * rolled up yet. Written so that PostgreSQL reads it too (docs/scale-out.md): the buckets come
 * from a derived table, so the `last` subquery names only grouped columns.
 */
const BUCKETS_OF_RAW = `
  SELECT b.series_id AS series_id, CAST($1 AS INTEGER) AS grain, b.bucket AS bucket,
         min(b.value) AS min, max(b.value) AS max, avg(b.value) AS avg,
         percentile_cont(b.value, 0.5) AS p50, percentile_cont(b.value, 0.95) AS p95,
         (SELECT l.value FROM metric_samples l WHERE l.series_id = b.series_id AND l.t >= b.bucket AND l.t < b.bucket + $2 ORDER BY l.t DESC LIMIT 1) AS last,
         count(*) AS samples
  FROM (SELECT s.series_id AS series_id, (s.t / $2) * $2 AS bucket, s.value AS value FROM metric_samples s
        WHERE s.t >= $3 AND s.t < $4 AND s.series_id IN (SELECT value FROM json_each($5))) AS b
  GROUP BY b.series_id, b.bucket`

/** Stores the buckets of these series with raw samples in [fromUs, toUs); answers the rows written. */
export async function rollupRange(db: DbOrTx, grain: number, seriesIds: number[], fromUs: number, toUs: number): Promise<number> {
  const r = await rawSql(db).run(
    `INSERT INTO metric_rollups (series_id, grain, bucket, min, max, avg, p50, p95, last, samples)
     ${BUCKETS_OF_RAW}
     ON CONFLICT (series_id, grain, bucket) DO UPDATE SET
       min = excluded.min, max = excluded.max, avg = excluded.avg, p50 = excluded.p50,
       p95 = excluded.p95, last = excluded.last, samples = excluded.samples`,
    grain,
    grain * US,
    fromUs,
    toUs,
    JSON.stringify(seriesIds),
  )
  return r.changes
}

/**
 * BUCKETS_OF_RAW for one bucket, [$1, $2): grouped by series alone, which SQLite does straight off
 * the primary key's order, without the sorter the bucket expression needs (half the time for a
 * running hour). Each aggregate sees the same values in the same order (`t` within a series: the
 * sorter keeps the scan's order, and the identity test pins the bytes), so `avg`, order-sensitive
 * in floating point, comes out the same to the last bit.
 */
const ONE_BUCKET_OF_RAW = `
  SELECT s.series_id, min(s.value), max(s.value), avg(s.value),
         percentile_cont(s.value, 0.5), percentile_cont(s.value, 0.95),
         (SELECT l.value FROM metric_samples l WHERE l.series_id = s.series_id AND l.t >= $1 AND l.t < $2 ORDER BY l.t DESC LIMIT 1)
  FROM metric_samples s
  WHERE s.t >= $1 AND s.t < $2 AND s.series_id IN (SELECT value FROM json_each($3))
  GROUP BY s.series_id`

/** What rollupRange would store for these series in [fromUs, toUs), read straight from the raw samples, as storedBuckets answers. */
export async function rawBuckets(db: DbOrTx, grain: number, seriesIds: number[], fromUs: number, toUs: number): Promise<BucketRow[]> {
  if (seriesIds.length === 0 || fromUs >= toUs) return []
  // The usual case, the running bucket alone. (PostgreSQL keeps the one statement: its plans give no such order to rely on.)
  if (toUs - fromUs === grain * US && fromUs % (grain * US) === 0 && !isPostgres(db)) {
    const rows = await rawSql(db).values<[number, number | null, number | null, number | null, number | null, number | null, number | null]>(
      ONE_BUCKET_OF_RAW,
      fromUs,
      toUs,
      JSON.stringify(seriesIds),
    )
    return rows.map((r) => [r[0], fromUs, r[1], r[2], r[3], r[4], r[5], r[6]])
  }
  return await rawSql(db).values<BucketRow>(
    `SELECT series_id, bucket, min, max, avg, p50, p95, last FROM (${BUCKETS_OF_RAW}) AS r`,
    grain,
    grain * US,
    fromUs,
    toUs,
    JSON.stringify(seriesIds),
  )
}

/**
 * The raw samples of these series in [fromUs, toUs) as [series, t, value], in series then `t`
 * order (the primary key's: an index seek per series, no sorter), for the running hour kept between
 * answers (running-hour.ts). Null on PostgreSQL, where that is not used.
 */
export async function rawSamples(db: DbOrTx, seriesIds: number[], fromUs: number, toUs: number): Promise<[number, number, number | null][] | null> {
  if (isPostgres(db)) return null
  if (seriesIds.length === 0 || fromUs >= toUs) return []
  return await rawSql(db).values<[number, number, number | null]>(
    `SELECT series_id, t, value FROM metric_samples
     WHERE series_id IN (SELECT value FROM json_each($1)) AND t >= $2 AND t < $3 ORDER BY series_id, t`,
    JSON.stringify(seriesIds),
    fromUs,
    toUs,
  )
}

/** Deletes at most `limit` raw samples older than `t` (the oldest first); answers how many. */
export async function deleteSamplesBefore(db: DbOrTx, t: number, limit: number): Promise<number> {
  // SQLite's rowid and PostgreSQL's ctid name a row without its key.
  const text = isPostgres(db)
    ? 'DELETE FROM metric_samples WHERE ctid IN (SELECT ctid FROM metric_samples WHERE t < $1 ORDER BY t LIMIT $2)'
    : 'DELETE FROM metric_samples WHERE rowid IN (SELECT rowid FROM metric_samples WHERE t < $1 ORDER BY t LIMIT $2)'
  return (await rawSql(db).run(text, t, limit)).changes
}

/** Deletes at most `limit` buckets of `grain` starting before `bucket`; answers how many. */
export async function deleteRollupsBefore(db: DbOrTx, grain: number, bucket: number, limit: number): Promise<number> {
  const text = isPostgres(db)
    ? 'DELETE FROM metric_rollups WHERE ctid IN (SELECT ctid FROM metric_rollups WHERE grain = $1 AND bucket < $2 ORDER BY bucket LIMIT $3)'
    : 'DELETE FROM metric_rollups WHERE rowid IN (SELECT rowid FROM metric_rollups WHERE grain = $1 AND bucket < $2 ORDER BY bucket LIMIT $3)'
  return (await rawSql(db).run(text, grain, bucket, limit)).changes
}

/** The hourly rollups, with a value, of one metric of a server's GPUs in [fromUs, toUs). */
const gpuHourly = (serverId: string, metric: string, fromUs: number, toUs: number) =>
  and(
    eq(metricSeries.serverId, serverId),
    eq(metricSeries.metric, metric),
    gte(metricSeries.gpuIndex, 0),
    eq(metricRollups.grain, 3600),
    gte(metricRollups.bucket, fromUs),
    lt(metricRollups.bucket, toUs),
    isNotNull(metricRollups.avg),
  )

/**
 * A server's average measured GPU power over [fromUs, toUs), in watts: per hourly rollup bucket the
 * `power_w` averages of its GPUs are summed, and those sums are averaged over the buckets that have
 * one. Null when nothing was measured in the window (marketplaces: electricity per GPU-hour).
 */
export async function averageGpuPowerW(db: DbOrTx, serverId: string, fromUs: number, toUs: number): Promise<number | null> {
  const perBucket = db
    .select({ bucket: metricRollups.bucket, watts: sql<number>`sum(${metricRollups.avg})`.as('watts') })
    .from(metricRollups)
    .innerJoin(metricSeries, eq(metricSeries.id, metricRollups.seriesId))
    .where(gpuHourly(serverId, 'power_w', fromUs, toUs))
    .groupBy(metricRollups.bucket)
    .as('per_bucket')
  const row = await db
    .select({ watts: sql<number | null>`avg(${perBucket.watts})` })
    .from(perBucket)
    .get()
  return row?.watts ?? null
}

export type GpuDay = { serverId: string; day: number; sum: number; buckets: number; gpuHours: number }

/**
 * One GPU metric of many servers, per server and UTC day in [fromUs, toUs), from the hourly
 * rollups (with a value) in ONE query, whatever the number of servers and days (the reports):
 * `sum` of the GPUs' hourly averages, `buckets` the hours with at least one GPU measured, `gpuHours`
 * the GPU-hours measured. So a day's average summed over the GPUs is sum ÷ buckets (what
 * averageGpuPowerW gives for that day), and its average per GPU-hour is sum ÷ gpuHours.
 */
export async function gpuMetricByServerDay(db: DbOrTx, serverIds: readonly string[], metric: string, fromUs: number, toUs: number): Promise<GpuDay[]> {
  if (serverIds.length === 0 || toUs <= fromUs) return []
  // The constant written out, not bound: PostgreSQL must see the same expression in SELECT and GROUP BY.
  const day = sql<number>`(${metricRollups.bucket} / ${sql.raw(String(DAY_US))}) * ${sql.raw(String(DAY_US))}`
  return (
    await db
      .select({
        serverId: metricSeries.serverId,
        day: day.as('day'),
        sum: sql<number>`sum(${metricRollups.avg})`,
        buckets: sql<number>`count(DISTINCT ${metricRollups.bucket})`,
        gpuHours: sql<number>`count(*)`,
      })
      .from(metricRollups)
      .innerJoin(metricSeries, eq(metricSeries.id, metricRollups.seriesId))
      .where(
        and(
          inArray(metricSeries.serverId, [...serverIds]),
          eq(metricSeries.metric, metric),
          gte(metricSeries.gpuIndex, 0),
          eq(metricRollups.grain, 3600),
          gte(metricRollups.bucket, fromUs),
          lt(metricRollups.bucket, toUs),
          isNotNull(metricRollups.avg),
        ),
      )
      .groupBy(metricSeries.serverId, day)
      .all()
  ).map((r) => ({ serverId: r.serverId, day: Number(r.day), sum: Number(r.sum), buckets: Number(r.buckets), gpuHours: Number(r.gpuHours) }))
}
