import { systemContext } from '../../platform/audit-context'
import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { DomainError } from '../../platform/domain-error'
import type { TenantWalk } from '../../platform/jobs'
import { offerStates, publishOffer, withdrawOffer } from '../marketplaces'
import { findOperation, nextItem, unfinishedOperations, updateItem, updateOperation, type ItemRow, type OperationRow } from './bulk.repository'
import { planItem } from './plan'

/**
 * The bulk.run job (docs/marketplaces.md "Bulk changes"): sends each operation's items one after
 * the other, through the same verbs as PUT/DELETE …/offer, so each call is paced by the adapter's
 * per-key, per-endpoint spacing (Vast's thresholds plus 10 %), retried on a 429 like Vast's own
 * client, and written to the operations log with the reason `bulk operation <id>`.
 *
 * Resumable: an item is marked `sending` (and its attempt counted) before its call and decided in
 * the database right after, so a run that stops (a restart) leaves every decided item decided and
 * the next run goes on from the first item not decided. An item left `sending` by a process that
 * died during its call is sent again: setting the same price or withdrawing twice leaves the same
 * listing (the operations log shows both calls). Each run sends at most ITEMS_PER_RUN items per
 * tenant, so a shutdown waits for at most that many paced calls; the job runs every 5 seconds.
 */

const ITEMS_PER_RUN = 10
/** A platform unreachable (or rate-limiting past the retries) this many times for one item fails the item. */
const MAX_ATTEMPTS = 5

type Outcome = { state: 'done' | 'refused' | 'skipped' | 'failed'; reason: string | null; after?: ItemRow['after'] } | { state: 'pending'; reason: string }

/** What one item's call came to. */
async function send(deps: Deps, op: OperationRow, item: ItemRow): Promise<Outcome> {
  // Planned again now: the offer may have changed since the operation was made (a sync, another write).
  const link = (await offerStates(deps.db, op.tenantId, op.marketplace)).find((l) => l.serverId === item.serverId)
  // An item left sending by a stopped run was planned and maybe sent already: what it would change still goes.
  const plan = planItem(op.marketplace, op.action, op.change, link)
  if (plan.outcome === 'skip' && item.state !== 'sending') return { state: 'skipped', reason: plan.reason }
  // gpuhq acting on the operation its member confirmed: the operations log shows `system` and the operation in `reason`.
  const { actor, audit } = systemContext(op.tenantId)
  const target = { deps, actor, audit, serverId: item.serverId, marketplace: op.marketplace }
  const reason = `bulk operation ${op.id}`
  try {
    if (op.action === 'withdraw') await withdrawOffer({ ...target, reason })
    else {
      const input = plan.outcome === 'change' ? plan.input : item.after ? inputOfAfter(op, item) : null
      if (!input) return { state: 'skipped', reason: plan.outcome === 'skip' ? plan.reason : 'nothing to send' }
      await publishOffer({ ...target, input, reason })
    }
    return { state: 'done', reason: null, after: plan.outcome === 'change' ? plan.after : item.after }
  } catch (e) {
    if (!(e instanceof DomainError)) throw e
    if (e.code === 'marketplaces.refused') return { state: 'refused', reason: e.message }
    if (e.code === 'marketplaces.link_not_found') return { state: 'skipped', reason: `no longer linked at ${op.marketplace}` }
    // A drain keeps the server off the market until its work is done (its words say which and how to end it).
    if (e.code === 'marketplaces.listing_held') return { state: 'skipped', reason: e.message }
    if (e.code === 'marketplaces.platform_unavailable') {
      // The adapter's own words ("marketplace_a could not be reached (ECONNREFUSED)", "kept answering 429 …"): no key in them.
      const why = String(e.facts.internal ?? e.message).slice(0, 300)
      return item.attempts + 1 >= MAX_ATTEMPTS ? { state: 'failed', reason: `${why}; gave up after ${MAX_ATTEMPTS} tries` } : { state: 'pending', reason: why }
    }
    return { state: 'failed', reason: e.message }
  }
}

/** The prices an item left sending would have set (its `after`), for the resend. */
function inputOfAfter(op: OperationRow, item: ItemRow): Record<string, unknown> | null {
  const after = item.after
  if (!after) return null
  if (op.marketplace === 'marketplace_a')
    return after.price_gpu_hour ? { price_gpu_hour: after.price_gpu_hour, ...(op.change.min_bid_hour ? { min_bid_hour: op.change.min_bid_hour } : {}) } : null
  return op.change.coin_prices ? { coin_prices: op.change.coin_prices } : null
}

/** One tenant's part of a run: up to ITEMS_PER_RUN items, operation after operation, oldest first. */
async function runTenant(deps: Deps, tenantId: string, operationIds: string[]): Promise<number> {
  let sent = 0
  for (const operationId of operationIds) {
    for (;;) {
      const op = await findOperation(deps.db, tenantId, operationId)
      if (!op) break
      const item = await nextItem(deps.db, tenantId, operationId)
      if (!item) {
        if (op.state === 'running') await withTransaction(deps.db, (tx) => updateOperation(tx, op.id, { state: 'finished', finishedAt: deps.clock.nowUs() }))
        break
      }
      if (sent >= ITEMS_PER_RUN) return sent
      // A cancelled operation sends only what a stopped run left sending (its pending items were cancelled).
      if (op.state === 'cancelled' && item.state === 'pending') break
      await withTransaction(deps.db, (tx) => updateItem(tx, item.id, { state: 'sending', attempts: item.attempts + 1, updatedAt: deps.clock.nowUs() }))
      sent++
      const outcome = await send(deps, op, item)
      const now = deps.clock.nowUs()
      await withTransaction(deps.db, async (tx) => {
        if (outcome.state === 'pending') await updateItem(tx, item.id, { state: 'pending', reason: outcome.reason, updatedAt: now })
        // `after` is the offer the item left: none when the platform did not take it.
        else
          await updateItem(tx, item.id, {
            state: outcome.state,
            reason: outcome.reason,
            after: outcome.state === 'done' ? (outcome.after ?? item.after) : null,
            updatedAt: now,
            finishedAt: now,
          })
      })
      // The platform is unwell: this operation waits for the next run rather than knocking again now.
      if (outcome.state === 'pending') break
    }
  }
  return sent
}

/** The bulk.run job: every tenant with items to send, tenants side by side (each has its own key, so its own pacing). */
export async function runBulkOperations(deps: Deps, tenants: TenantWalk): Promise<string> {
  const byTenant = new Map<string, string[]>()
  for (const u of await unfinishedOperations(deps.db)) byTenant.set(u.tenantId, [...(byTenant.get(u.tenantId) ?? []), u.operationId])
  const sent = await Promise.all([...byTenant].map(([tenantId, ops]) => tenants.run(tenantId, () => runTenant(deps, tenantId, ops))))
  return `${sent.reduce<number>((a, n) => a + (n ?? 0), 0)} items sent for ${byTenant.size} tenants`
}
