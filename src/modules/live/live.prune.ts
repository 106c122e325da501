import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { TenantWalk } from '../../platform/jobs'
import { overCap, pruneBefore, pruneTenantThrough } from './live.repository'

/** Events deleted per transaction: the write lock is held a few milliseconds at a time. */
const SLICE = 1000
const yieldLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * The live.prune job: deletes events past LIVE_EVENTS_RETENTION_HOURS, then each tenant's oldest
 * past LIVE_EVENTS_MAX_PER_TENANT, SLICE per transaction, yielding between two. Each slice raises
 * the tenants' horizons with it, so a client resuming before them is told (`stream.reset`). Each
 * tenant's cap is its own part of the job's per-tenant error boundary: a tenant whose events cannot
 * be deleted keeps them, is reported and waits out a backoff; the others are pruned.
 */
export async function pruneLiveEvents(deps: Deps, tenants: TenantWalk = new TenantWalk(deps, 'live.prune')): Promise<string> {
  const { retentionHours, maxPerTenant } = deps.config.liveEvents
  const before = deps.clock.nowUs() - retentionHours * 3600 * 1_000_000
  let slices = 0
  const sliced = async (deleteSome: () => Promise<number>): Promise<number> => {
    let total = 0
    for (;;) {
      const n = await withTransaction(deps.db, () => deleteSome())
      slices++
      total += n
      if (n < SLICE) return total
      await yieldLoop()
    }
  }
  const old = await sliced(() => pruneBefore(deps.db, before, SLICE))
  let capped = 0
  for (const { tenantId, throughSeq } of await overCap(deps.db, maxPerTenant))
    capped += (await tenants.run(tenantId, () => sliced(() => pruneTenantThrough(deps.db, tenantId, throughSeq, SLICE)))) ?? 0
  return `removed ${old} live events past retention and ${capped} past the per-tenant cap in ${slices} transactions`
}
