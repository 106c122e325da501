import { integer, primaryKey, real, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * The reports' stored daily aggregates (docs/reports.md "Cost"): per server, GPU metric and UTC
 * day, what telemetry's hourly rollups of that day add up to (`sum` of the GPUs' hourly averages,
 * `buckets` the hours with a measurement, `gpu_hours` the GPU-hours measured). Written once a day
 * is settled (its hourly rollups can no longer change, docs/telemetry.md), so a report over a year
 * reads a row per server and day instead of 24 per GPU. A day without any measurement has no row.
 */
export const reportGpuDays = sqliteTable(
  'report_gpu_days',
  {
    tenantId: text('tenant_id').notNull(),
    serverId: text('server_id').notNull(),
    metric: text('metric').notNull(),
    /** The first instant (µs) of the UTC day. */
    day: integer('day').notNull(),
    sum: real('sum').notNull(),
    buckets: integer('buckets').notNull(),
    gpuHours: integer('gpu_hours').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.serverId, t.metric, t.day] })],
)

/**
 * Per server and metric, the settled days [from_day, until_day) whose aggregates report_gpu_days
 * holds (rows or the knowledge that there are none): one contiguous span, grown as reports ask.
 */
export const reportGpuSpans = sqliteTable(
  'report_gpu_spans',
  {
    tenantId: text('tenant_id').notNull(),
    serverId: text('server_id').notNull(),
    metric: text('metric').notNull(),
    fromDay: integer('from_day').notNull(),
    untilDay: integer('until_day').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.serverId, t.metric] })],
)
