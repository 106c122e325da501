import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { servers } from './fleet'

/**
 * Telemetry history. A series is one metric of one server's host (gpu_index -1) or GPU; samples
 * and rollups refer to it by a small integer, which keeps the hot tables narrow.
 */
export const metricSeries = sqliteTable(
  'metric_series',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    gpuIndex: integer('gpu_index').notNull(),
    metric: text('metric').notNull(),
  },
  (t) => [uniqueIndex('metric_series_key').on(t.serverId, t.gpuIndex, t.metric)],
)

/** Raw samples as the agents sent them, kept for METRICS_RAW_RETENTION_HOURS. */
export const metricSamples = sqliteTable(
  'metric_samples',
  {
    seriesId: integer('series_id').notNull(),
    t: integer('t').notNull(),
    value: real('value'),
  },
  (t) => [primaryKey({ columns: [t.seriesId, t.t] }), index('metric_samples_t').on(t.t)],
)

/** 5-minute (grain 300) and hourly (grain 3600) buckets, half-open [bucket, bucket + grain). */
export const metricRollups = sqliteTable(
  'metric_rollups',
  {
    seriesId: integer('series_id').notNull(),
    grain: integer('grain').notNull(),
    bucket: integer('bucket').notNull(),
    min: real('min'),
    max: real('max'),
    avg: real('avg'),
    p50: real('p50'),
    p95: real('p95'),
    last: real('last'),
    samples: integer('samples').notNull(),
  },
  (t) => [primaryKey({ columns: [t.seriesId, t.grain, t.bucket] }), index('metric_rollups_grain_bucket').on(t.grain, t.bucket)],
)

/**
 * Per grain: every bucket ending at or before `doneUntil` is final. `redoFrom` is lowered when a
 * sample arrives for time already rolled up (an agent flushing after a reconnect); the next run
 * recomputes from there.
 */
export const rollupWatermarks = sqliteTable('rollup_watermarks', {
  grain: integer('grain').primaryKey(),
  doneUntil: integer('done_until').notNull(),
  redoFrom: integer('redo_from'),
  updatedAt: integer('updated_at').notNull(),
})
