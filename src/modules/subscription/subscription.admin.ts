import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { utcDay } from '../../platform/time'
import { recordSystemEvent } from '../audit'
import { assignPlan, findPlan, hourStartOf } from '../plans'
import { findTenant, setTenantPlanCode } from '../tenants'
import { SubscriptionErrors } from './subscription.errors'
import { bumpVersion, switchPlan } from './subscription.service'

/** Operator verb (scripts/admin set-plan): acts as the system and leaves an audit row. */
export async function setTenantPlan({ deps, input }: { deps: Deps; input: { tenantId: string; plan: string | null } }): Promise<void> {
  await withTransaction(deps.db, async (tx) => {
    const tenant = await findTenant(tx, input.tenantId)
    if (!tenant) throw SubscriptionErrors.tenantNotFound(`no tenant ${input.tenantId}`)
    if (input.plan !== null && !(await findPlan(tx, input.plan))) throw SubscriptionErrors.planNotFound(`no plan ${input.plan}`)
    // The charge job prices each hour by the tenant's plan assignments, so the operator's plan is
    // one from the current hour on (no plan: nothing billed from then); earlier hours keep theirs.
    if (input.plan !== null) await switchPlan(tx, deps, input.tenantId, tenant.planCode, input.plan, utcDay(deps.clock.nowUs()))
    else {
      await assignPlan(tx, deps, input.tenantId, tenant.planCode, null, hourStartOf(deps.clock.nowUs()))
      await setTenantPlanCode(tx, input.tenantId, null)
    }
    await bumpVersion(tx, tenant)
    await recordSystemEvent(tx, deps, input.tenantId, 'plans.set', input.plan ?? 'no plan')
  })
}
