import type { Static } from '@sinclair/typebox'
import { withTransaction, type DbOrTx, type Tx } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { DomainError } from '../../platform/domain-error'
import { assertIfMatch, etagOf } from '../../platform/etag'
import { formatMoney } from '../../platform/money'
import { formatNullableTimestamp, formatTimestamp, parseDay } from '../../platform/time'
import { type AuditContext, recordAudit, recordSystemEvent } from '../audit'
import { tenantOwnsTopup } from '../payments'
import { assignPlan, findPlan, hourStartOf, planView } from '../plans'
import { findTenant, setSubscriptionVersion, setTenantPlanCode, type TenantRow } from '../tenants'
import { countManagedServers } from '../fleet'
import { SubscriptionErrors } from './subscription.errors'
import type { ChangeOrder } from './subscription.model'
import { computeQuote, type Quote } from './subscription.quote'
import { awaitingPaymentChange, findTenantChange, insertChange, lastChange, pendingChange, updateChange, type ChangeRow } from './subscription.repository'

/**
 * Plan changes (docs/subscription.md). Upgrade, covered → applied now; upgrade, not covered →
 * awaiting_payment until a verified top-up covers the reserve (activated inside the crediting
 * transaction); downgrade → scheduled for its billing day, never gated by balance; lateral →
 * applied. subscription.fire re-reads the rule on the effective day.
 */
function changeView(c: ChangeRow) {
  return {
    id: c.id,
    status: c.status,
    direction: c.direction,
    from_plan: c.fromPlan,
    target_plan: c.targetPlan,
    effective_at: formatTimestamp(c.effectiveAt),
    billing_effective_day: c.billingEffectiveDay,
    required_reserve_usd: formatMoney(c.requiredReserveMicros),
    refusal_reason: c.refusalReason,
    topup_id: c.topupId,
    requested_at: formatTimestamp(c.requestedAt),
    applied_at: formatNullableTimestamp(c.appliedAt),
    cancelled_at: formatNullableTimestamp(c.cancelledAt),
    refused_at: formatNullableTimestamp(c.refusedAt),
  }
}

/** GET /subscription shows the plan and the pending change under the subscription version's ETag. */
export async function bumpVersion(tx: DbOrTx, tenant: TenantRow): Promise<void> {
  await setSubscriptionVersion(tx, tenant.id, tenant.subscriptionVersion + 1)
}

/**
 * Switches the tenant's plan: entitlements now; prices from `billingDay` 00:00 UTC, or from the start
 * of the current hour when that is later, so an hour that already passed is never re-priced.
 */
export async function switchPlan(
  tx: DbOrTx,
  deps: Pick<Deps, 'clock'>,
  tenantId: string,
  fromPlan: string | null,
  toPlan: string,
  billingDay: string,
): Promise<void> {
  const from = Math.max(parseDay(billingDay)!, hourStartOf(deps.clock.nowUs()))
  await assignPlan(tx, deps, tenantId, fromPlan, toPlan, from)
  await setTenantPlanCode(tx, tenantId, toPlan)
}

export async function orderChange({
  deps,
  actor,
  audit,
  input,
  ifMatch,
}: {
  deps: Deps
  actor: Actor
  audit: AuditContext
  input: Static<typeof ChangeOrder>
  ifMatch: string | null
}) {
  return await withTransaction(deps.db, async (tx) => {
    const tenant = (await findTenant(tx, actor.tenantId))!
    const now = deps.clock.nowUs()
    const q = await computeQuote(tx, tenant, input.target_plan, now)
    // A linked top-up must be one of the tenant's own (a foreign id answers like an unknown one).
    if (input.topup_id && !(await tenantOwnsTopup(tx, tenant.id, input.topup_id.toLowerCase()))) throw SubscriptionErrors.topupNotFound()
    if (q.target.code === q.current.code) throw SubscriptionErrors.alreadyOnPlan(`the tenant is already on ${q.target.code}`)
    if (q.target.serversMax !== null && q.managed > q.target.serversMax)
      throw SubscriptionErrors.serverLimitReached(
        `${q.managed} managed servers exceed the ${q.target.label} limit of ${q.target.serversMax}; decommission some first`,
      )
    const version = etagOf(tenant.subscriptionVersion)
    const pending = await pendingChange(tx, tenant.id)
    if (pending) {
      if (ifMatch === null) throw SubscriptionErrors.changeAlreadyPending(undefined, { currentVersion: version })
      assertIfMatch(ifMatch, version)
      // A scheduled change whose day has come is no longer replaceable, as it is no longer cancellable.
      if (pending.status === 'scheduled' && pending.effectiveAt <= now)
        throw SubscriptionErrors.changeEffective('the pending change is already in effect and will be applied by the next run')
      await updateChange(tx, pending.id, { status: 'cancelled', cancelledAt: now })
    } else assertIfMatch(ifMatch, version)
    const row: ChangeRow = {
      id: deps.newId(),
      tenantId: tenant.id,
      fromPlan: q.current.code,
      targetPlan: q.target.code,
      direction: q.direction,
      status: 'applied',
      refusalReason: null,
      effectiveAt: now,
      billingEffectiveDay: q.billingDay,
      requiredReserveMicros: q.reserve,
      topupId: input.topup_id?.toLowerCase() ?? null,
      requestedAt: now,
      appliedAt: null,
      cancelledAt: null,
      refusedAt: null,
    }
    if (q.direction === 'downgrade') {
      row.status = 'scheduled'
      row.effectiveAt = parseDay(q.billingDay)!
    } else if (q.direction === 'upgrade' && !q.covered) {
      row.status = 'awaiting_payment'
    } else {
      row.appliedAt = now
      await switchPlan(tx, deps, tenant.id, q.current.code, q.target.code, q.billingDay)
    }
    await insertChange(tx, row)
    await bumpVersion(tx, tenant)
    await recordAudit(tx, deps, audit, { operation: `subscription.change.${row.status}`, targetKind: 'subscription_change', targetId: row.id })
    return { change: changeView(row), created: row.status !== 'applied' }
  })
}

export async function getSubscription({ deps, actor }: { deps: Deps; actor: Actor }) {
  const tenant = (await findTenant(deps.db, actor.tenantId))!
  const plan = tenant.planCode ? await findPlan(deps.db, tenant.planCode) : undefined
  const pending = await pendingChange(deps.db, tenant.id)
  const last = await lastChange(deps.db, tenant.id)
  return {
    body: {
      plan: plan ? planView(plan) : null,
      pending_change: pending ? changeView(pending) : null,
      last_change: last ? changeView(last) : null,
      account_state: tenant.accountState,
      version: tenant.subscriptionVersion,
    },
    etag: etagOf(tenant.subscriptionVersion),
  }
}

/** GET /plans/current: the tenant's plan, how much of its server limit is used, and the account state. */
export async function currentPlan({ deps, actor }: { deps: Deps; actor: Actor }) {
  const tenant = (await findTenant(deps.db, actor.tenantId))!
  const plan = tenant.planCode ? await findPlan(deps.db, tenant.planCode) : undefined
  const used = await countManagedServers(deps.db, actor.tenantId)
  return {
    plan: plan ? planView(plan) : null,
    usage: { managed_servers: used, servers_left: plan ? (plan.serversMax === null ? null : Math.max(0, plan.serversMax - used)) : 0 },
    account_state: tenant.accountState,
  }
}

export async function cancelChange({ deps, actor, audit, id }: { deps: Deps; actor: Actor; audit: AuditContext; id: string }) {
  return await withTransaction(deps.db, async (tx) => {
    const c = await findTenantChange(tx, actor.tenantId, id.toLowerCase())
    if (!c) throw SubscriptionErrors.changeNotFound()
    const now = deps.clock.nowUs()
    if (c.status === 'applied') throw SubscriptionErrors.changeAlreadyApplied()
    if (c.status === 'cancelled' || c.status === 'refused') throw SubscriptionErrors.changeClosed(`the change was already ${c.status}`)
    if (c.status === 'scheduled' && c.effectiveAt <= now) throw SubscriptionErrors.changeEffective()
    const next = { ...c, status: 'cancelled' as const, cancelledAt: now }
    await updateChange(tx, c.id, { status: 'cancelled', cancelledAt: now })
    await bumpVersion(tx, (await findTenant(tx, actor.tenantId))!)
    await recordAudit(tx, deps, audit, { operation: 'subscription.change.cancelled', targetKind: 'subscription_change', targetId: c.id })
    return changeView(next)
  })
}

/**
 * The reaction to topup.succeeded (wired in src/reactions.ts): inside the verified payment's
 * transaction, a pending upgrade linked to this top-up (by change_id, or by the order's topup_id) is
 * applied once the balance covers its reserve.
 */
export async function activateOnTopup(tx: Tx, deps: Deps, topup: { id: string; tenantId: string; changeId: string | null }): Promise<void> {
  const pending = await awaitingPaymentChange(tx, topup.tenantId)
  if (!pending || (pending.id !== topup.changeId && pending.topupId !== topup.id)) return
  const tenant = (await findTenant(tx, topup.tenantId))!
  const now = deps.clock.nowUs()
  let q: Quote
  try {
    q = await computeQuote(tx, tenant, pending.targetPlan, now)
  } catch (e) {
    // The target became contract-priced or left the catalogue (or the tenant lost its plan): the
    // payment is still credited; the change keeps waiting until it is cancelled or replaced.
    if (e instanceof DomainError) return
    throw e
  }
  if (q.direction === 'upgrade' && !q.covered) return // paid too little: it keeps waiting
  await switchPlan(tx, deps, tenant.id, tenant.planCode, pending.targetPlan, q.billingDay)
  await updateChange(tx, pending.id, { status: 'applied', appliedAt: now, topupId: pending.topupId ?? topup.id, billingEffectiveDay: q.billingDay })
  await bumpVersion(tx, tenant)
  await recordSystemEvent(tx, deps, tenant.id, 'subscription.change.applied', `${pending.targetPlan} after top-up ${topup.id}`)
}
