import { and, eq, gte, inArray, lt, sql } from 'drizzle-orm'
import { reportGpuDays, reportGpuSpans } from '../../../db/schema/reports'
import type { DbOrTx } from '../../../db/client'

/** The reports' stored daily aggregates (db/schema/reports.ts): reads and writes, tenant in every WHERE. */

export type GpuDayRow = { serverId: string; day: number; sum: number; buckets: number; gpuHours: number }
export type Span = { serverId: string; fromDay: number; untilDay: number }

/** SQLite takes at most 32,766 parameters in one statement: id lists go in slices. */
const SLICE = 5000

/** The stored spans of the servers for one metric (servers with none are absent). */
export async function spansOf(db: DbOrTx, tenantId: string, serverIds: readonly string[], metric: string): Promise<Map<string, Span>> {
  const out = new Map<string, Span>()
  for (let i = 0; i < serverIds.length; i += SLICE)
    for (const r of await db
      .select({ serverId: reportGpuSpans.serverId, fromDay: reportGpuSpans.fromDay, untilDay: reportGpuSpans.untilDay })
      .from(reportGpuSpans)
      .where(and(eq(reportGpuSpans.tenantId, tenantId), eq(reportGpuSpans.metric, metric), inArray(reportGpuSpans.serverId, serverIds.slice(i, i + SLICE))))
      .all())
      out.set(r.serverId, r)
  return out
}

/** The stored days of the servers for one metric in [fromDay, untilDay). */
export async function storedGpuDays(
  db: DbOrTx,
  tenantId: string,
  serverIds: readonly string[],
  metric: string,
  fromDay: number,
  untilDay: number,
): Promise<GpuDayRow[]> {
  const out: GpuDayRow[] = []
  if (untilDay <= fromDay) return out
  for (let i = 0; i < serverIds.length; i += SLICE)
    out.push(
      ...(await db
        .select({
          serverId: reportGpuDays.serverId,
          day: reportGpuDays.day,
          sum: reportGpuDays.sum,
          buckets: reportGpuDays.buckets,
          gpuHours: reportGpuDays.gpuHours,
        })
        .from(reportGpuDays)
        .where(
          and(
            eq(reportGpuDays.tenantId, tenantId),
            inArray(reportGpuDays.serverId, serverIds.slice(i, i + SLICE)),
            eq(reportGpuDays.metric, metric),
            gte(reportGpuDays.day, fromDay),
            lt(reportGpuDays.day, untilDay),
          ),
        )
        .all()),
    )
  return out
}

/** Rows per INSERT: 7 parameters each, well inside SQLite's 32,766. */
const ROWS_PER_INSERT = 2000

/** Stores computed days (a recomputation writes the same numbers), in a few multi-row statements. */
export async function saveGpuDays(tx: DbOrTx, tenantId: string, metric: string, rows: readonly GpuDayRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT)
    await tx
      .insert(reportGpuDays)
      .values(
        rows
          .slice(i, i + ROWS_PER_INSERT)
          .map((r) => ({ tenantId, serverId: r.serverId, metric, day: r.day, sum: r.sum, buckets: r.buckets, gpuHours: r.gpuHours })),
      )
      .onConflictDoUpdate({
        target: [reportGpuDays.tenantId, reportGpuDays.serverId, reportGpuDays.metric, reportGpuDays.day],
        set: { sum: sql`excluded.sum`, buckets: sql`excluded.buckets`, gpuHours: sql`excluded.gpu_hours` },
      })
      .run()
}

/** Widens each server's span to cover [fromDay, untilDay) (which must touch or overlap what it held). */
export async function widenSpans(tx: DbOrTx, tenantId: string, serverIds: readonly string[], metric: string, fromDay: number, untilDay: number): Promise<void> {
  for (let i = 0; i < serverIds.length; i += ROWS_PER_INSERT)
    await tx
      .insert(reportGpuSpans)
      .values(serverIds.slice(i, i + ROWS_PER_INSERT).map((serverId) => ({ tenantId, serverId, metric, fromDay, untilDay })))
      .onConflictDoUpdate({
        target: [reportGpuSpans.tenantId, reportGpuSpans.serverId, reportGpuSpans.metric],
        set: {
          fromDay: sql`min(${reportGpuSpans.fromDay}, excluded.from_day)`,
          untilDay: sql`max(${reportGpuSpans.untilDay}, excluded.until_day)`,
        },
      })
      .run()
}
