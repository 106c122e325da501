import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { gpuMetricByServerDay, settledHourlyUntil, type GpuDay } from '../telemetry'
import { saveGpuDays, spansOf, storedGpuDays, widenSpans } from './reports.repository'

/**
 * A GPU metric per server and UTC day for the reports (docs/reports.md "Cost"), from stored daily
 * aggregates where the days are settled (telemetry's hourly buckets there can no longer change:
 * settledHourlyUntil), computed from the hourly rollups for the rest. What a report needs and is
 * not stored yet is computed once, WINDOW_DAYS at a time, and stored; the event loop is yielded
 * between windows, so another request waits at most one window, and the next report over those
 * days reads one row per server and day. The answer is exactly what gpuMetricByServerDay over the
 * whole range gives.
 */

const DAY_US = 86_400_000_000
/** Days per query while filling: a week of hourly rollups of every GPU of the servers asked for. */
const WINDOW_DAYS = 7

const yieldLoop = () => new Promise<void>((resolve) => setImmediate(resolve))
const floorDay = (us: number) => Math.floor(us / DAY_US) * DAY_US

/** The days [fromUs, untilUs) in windows of WINDOW_DAYS, in order. */
function windows(fromUs: number, untilUs: number): [number, number][] {
  const out: [number, number][] = []
  for (let w = fromUs; w < untilUs; w += WINDOW_DAYS * DAY_US) out.push([w, Math.min(untilUs, w + WINDOW_DAYS * DAY_US)])
  return out
}

export async function gpuDays(deps: Deps, tenantId: string, serverIds: readonly string[], metric: string, fromUs: number, toUs: number): Promise<GpuDay[]> {
  if (serverIds.length === 0 || toUs <= fromUs) return []
  const from = floorDay(fromUs)
  const settled = Math.min(floorDay(await settledHourlyUntil(deps)), toUs)
  const out: GpuDay[] = []
  if (settled > from) {
    // Servers grouped by the settled days still missing from their span (usually all alike).
    const spans = await spansOf(deps.db, tenantId, serverIds, metric)
    const groups = new Map<string, { ids: string[]; missing: [number, number][] }>()
    for (const id of serverIds) {
      const span = spans.get(id)
      const missing: [number, number][] = []
      if (!span) missing.push([from, settled])
      else {
        // Grown outwards from the span so it stays one piece: [from, span.fromDay) and [span.untilDay, settled).
        if (from < span.fromDay) missing.push([from, span.fromDay])
        if (settled > span.untilDay) missing.push([span.untilDay, settled])
      }
      if (missing.length === 0) continue
      const key = JSON.stringify(missing)
      const group = groups.get(key) ?? { ids: [], missing }
      group.ids.push(id)
      groups.set(key, group)
    }
    for (const { ids, missing } of groups.values()) {
      for (const [a, b] of missing) {
        // Towards the span: left parts backwards from it, right parts forwards, each step touching it.
        const steps = windows(a, b)
        if (b <= (spans.get(ids[0]!)?.fromDay ?? Number.NEGATIVE_INFINITY)) steps.reverse()
        for (const [w0, w1] of steps) {
          const rows = await gpuMetricByServerDay(deps.db, ids, metric, w0, w1)
          await withTransaction(deps.db, async (tx) => {
            await saveGpuDays(tx, tenantId, metric, rows)
            await widenSpans(tx, tenantId, ids, metric, w0, w1)
          })
          await yieldLoop()
        }
      }
    }
    out.push(...(await storedGpuDays(deps.db, tenantId, serverIds, metric, from, settled)))
  }
  // The days not settled yet: computed each time, a window at a time.
  for (const [w0, w1] of windows(Math.max(from, settled), toUs)) {
    out.push(...(await gpuMetricByServerDay(deps.db, serverIds, metric, w0, w1)))
    if (w1 < toUs) await yieldLoop()
  }
  return out
}
