import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import type { TenantWalk } from '../../platform/jobs'
import { latestOfMetric } from '../fleet'
import { notify } from './outbox.service'
import { findWatch, saveWatch } from './temperature.repository'

/**
 * The `temp` producer (docs/notifications.md "Categories"): a GPU whose latest temperature reading
 * stays at or above HIGH_C for DELAY is notified once; the condition re-arms only when a reading
 * falls below LOW_C (hysteresis), so a card hovering around the threshold is not notified per
 * sample. Runs after each telemetry flush (metrics.rollup); readings older than STALE are ignored
 * (an offline server is the `offline` category's business).
 */

const HIGH_C = 85
const LOW_C = 80
const DELAY_US = 2 * 60 * 1_000_000
const STALE_US = 5 * 60 * 1_000_000

/** The marks a GPU is judged by, shared with the alerts module's temperature incidents. */
export const TEMPERATURE_MARKS = { highC: HIGH_C, lowC: LOW_C, staleUs: STALE_US } as const

export async function watchTemperatures(deps: Deps, tenants: TenantWalk): Promise<string> {
  const now = deps.clock.nowUs()
  let alerted = 0
  for (const r of await latestOfMetric(deps.db, 'temperature_c', now - STALE_US)) {
    if (r.gpuIndex < 0 || r.value === null) continue
    const value = r.value
    // Each reading is its tenant's, in the job's per-tenant boundary: one that cannot be written stops no one else's.
    // Counted after commit: a PostgreSQL transaction run again must not count its GPU twice.
    const notified = await tenants.run(r.tenantId, () =>
      withTransaction(deps.db, async (tx): Promise<boolean> => {
        const w = (await findWatch(tx, r.serverId, r.gpuIndex)) ?? {
          serverId: r.serverId,
          gpuIndex: r.gpuIndex,
          overSince: null,
          alerted: false,
          updatedAt: now,
        }
        if (value < LOW_C) {
          if (w.overSince !== null || w.alerted) await saveWatch(tx, { ...w, overSince: null, alerted: false, updatedAt: now })
          return false
        }
        if (value < HIGH_C && w.overSince === null) return false // between the marks without a stretch: nothing starts
        const overSince = w.overSince ?? r.t
        if (!w.alerted && now - overSince >= DELAY_US) {
          await notify(tx, deps, r.tenantId, {
            category: 'temp',
            title: `GPU ${r.gpuIndex} hot: ${r.name}`,
            body: `GPU ${r.gpuIndex} of ${r.name} reads ${Math.round(value)} °C, at or above ${HIGH_C} °C for ${Math.round((now - overSince) / 60_000_000)} min. It is notified again only after it cools below ${LOW_C} °C.`,
            // Tagged for the GPU's temperature incident; the hysteresis above already keeps it to one per stretch.
            groupKey: `temp:${r.serverId}:${r.gpuIndex}`,
            groupWindowUs: 0,
          })
          await saveWatch(tx, { ...w, overSince, alerted: true, updatedAt: now })
          return true
        }
        if (w.overSince === null) await saveWatch(tx, { ...w, overSince, updatedAt: now })
        return false
      }),
    )
    if (notified) alerted++
  }
  return `${alerted} GPUs over temperature notified`
}
