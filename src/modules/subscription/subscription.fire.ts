import { withTransaction, type Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { TenantWalk } from '../../platform/jobs'
import { DomainError } from '../../platform/domain-error'
import { recordSystemEvent } from '../audit'
import { findTenant } from '../tenants'
import { computeQuote, type Quote } from './subscription.quote'
import { dueChanges, findChange, insertNotificationEvent, updateChange, type ChangeRow } from './subscription.repository'
import { bumpVersion, switchPlan } from './subscription.service'

/**
 * subscription.fire: on the effective day, re-read the rule and apply or refuse each scheduled change.
 * Only a target that became contract-priced or left the catalogue (the rule's own answers) refuses
 * with direction_changed. Each change is its own part of the job's per-tenant error boundary
 * (TenantWalk, scoped by the change): any other failure is logged with the job, the tenant and the
 * change, rolls that change's transaction back so it stays scheduled, does not stop the others,
 * records the run `partial`, and backs that change off (1, 2, 4… minutes, at most an hour; the job
 * runs hourly, so in practice the next run retries it).
 */
export async function fireScheduled(
  deps: Deps,
  run: { job: string; period: string } = { job: 'subscription.fire', period: 'manual' },
  tenants: TenantWalk = new TenantWalk(deps, run.job, undefined, run.period),
): Promise<string> {
  const now = deps.clock.nowUs()
  const due = await dueChanges(deps.db, now)
  let applied = 0
  let refused = 0
  for (const c of due) {
    const outcome = await tenants.run(c.tenantId, () => withTransaction(deps.db, (tx) => fireOne(tx, deps, c.id, now)), `plan change ${c.id}`)
    if (outcome === 'applied') applied++
    else if (outcome === 'refused') refused++
  }
  return `${due.length} due: ${applied} applied, ${refused} refused`
}

async function fireOne(tx: Tx, deps: Deps, id: string, now: number): Promise<'applied' | 'refused' | 'skipped'> {
  const c = (await findChange(tx, id))!
  if (c.status !== 'scheduled') return 'skipped'
  const tenant = (await findTenant(tx, c.tenantId))!
  let reason: ChangeRow['refusalReason'] = null
  let q: Quote | null = null
  try {
    q = await computeQuote(tx, tenant, c.targetPlan, now)
  } catch (e) {
    // The rule's own refusals: the target became contract-priced or left the catalogue.
    if (!(e instanceof DomainError)) throw e
    reason = 'direction_changed'
  }
  if (q && q.direction === 'upgrade') reason = 'direction_changed'
  else if (q && q.unitDaily !== null && q.unitDaily * q.managed > q.balance && q.unitDaily * q.managed > 0) reason = 'reserve_not_covered'
  if (reason) {
    await updateChange(tx, c.id, { status: 'refused', refusalReason: reason, refusedAt: now })
    await insertNotificationEvent(tx, {
      id: deps.newId(),
      tenantId: c.tenantId,
      category: 'payment',
      kind: 'subscription.change_refused',
      payload: { change_id: c.id, target_plan: c.targetPlan, reason },
      createdAt: now,
    })
    await recordSystemEvent(tx, deps, c.tenantId, 'subscription.change.refused', `${c.targetPlan}: ${reason}`)
    await deps.events.emit('subscription.change_refused', { tx, tenantId: c.tenantId, targetPlan: c.targetPlan, reason })
  } else {
    await switchPlan(tx, deps, tenant.id, tenant.planCode, c.targetPlan, c.billingEffectiveDay)
    await updateChange(tx, c.id, { status: 'applied', appliedAt: now })
    await recordSystemEvent(tx, deps, c.tenantId, 'subscription.change.applied', c.targetPlan)
  }
  await bumpVersion(tx, tenant)
  return reason ? 'refused' : 'applied'
}
