import { and, desc, eq, inArray } from 'drizzle-orm'
import { subscriptionChanges, tenants, topups } from '../../../db/schema'
import { withTransaction, type DbOrTx, type Tx } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { assertIfMatch, etagOf } from '../../platform/etag'
import { divideRounded, formatMoney } from '../../platform/money'
import { ProblemError, problems } from '../../platform/problem'
import { daysInMonth, formatNullableTimestamp, formatTimestamp, parseDay, US_PER_DAY, utcDay } from '../../platform/time'
import type { AuditContext } from '../audit/audit.context'
import { recordAudit, recordSystemEvent } from '../audit/audit.service'
import { balanceOf } from '../billing/ledger'
import { assignPlan, hourStartOf } from '../plans/plan-history'
import { findPlan, type PlanRow } from '../plans/plans.repository'
import { planView } from '../plans/plans.routes'
import { countManagedServers } from '../tokens/tokens.repository'
import { findTenant, type TenantRow } from '../tenants/tenants.repository'

/**
 * Plan changes (interface-spec "Subscription quote", "Subscription change"). Direction comes from
 * effective prices only: a contract-priced plan (no list price) ranks above every listed one.
 * Upgrade, covered → applied now; upgrade, not covered → awaiting_payment until a verified top-up
 * covers the reserve (activated inside the crediting transaction); downgrade → scheduled for the
 * first UTC day of next month (or the next day by the target's policy), never gated by balance;
 * lateral → applied. subscription.fire re-reads the rule on the effective day.
 */
export type ChangeRow = typeof subscriptionChanges.$inferSelect
const PENDING: ChangeRow['status'][] = ['scheduled', 'awaiting_payment']

function rank(price: number | null): number {
  return price === null ? Number.POSITIVE_INFINITY : price
}

export function directionOf(current: PlanRow, target: PlanRow): ChangeRow['direction'] {
  const a = rank(current.priceMicrosPerServerMonth)
  const b = rank(target.priceMicrosPerServerMonth)
  return b > a ? 'upgrade' : b < a ? 'downgrade' : 'lateral'
}

function nextDay(day: string): string {
  return utcDay(parseDay(day)! + US_PER_DAY)
}

function firstOfNextMonth(nowUs: number): string {
  const d = new Date(nowUs / 1000)
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString().slice(0, 10)
}

export type Quote = {
  current: PlanRow
  target: PlanRow
  direction: ChangeRow['direction']
  managed: number
  unitDaily: number | null
  reserve: number
  balance: number
  covered: boolean
  billingDay: string
}

export function computeQuote(db: DbOrTx, tenant: TenantRow, targetCode: string, now: number): Quote {
  if (!tenant.planCode) throw new ProblemError('plan_required', { detail: 'the tenant has no plan assignment' })
  const target = findPlan(db, targetCode)
  if (!target) throw problems.notFound(`no plan ${targetCode}`)
  if (target.priceMicrosPerServerMonth === null)
    throw new ProblemError('feature_not_entitled', { detail: `${target.label} is contract-priced; ask us for an offer` })
  const current = findPlan(db, tenant.planCode)
  if (!current) throw new ProblemError('plan_required', { detail: "the tenant's plan is no longer in the catalogue" })
  const direction = directionOf(current, target)
  const managed = countManagedServers(db, tenant.id)
  const d = new Date(now / 1000)
  const unitDaily = divideRounded(target.priceMicrosPerServerMonth, daysInMonth(d.getUTCFullYear(), d.getUTCMonth() + 1))
  const reserve = direction === 'upgrade' ? unitDaily * managed : 0
  const balance = balanceOf(db, tenant.id)
  const today = utcDay(now)
  const billingDay =
    direction === 'upgrade'
      ? target.upgradeEffective === 'next_day'
        ? nextDay(today)
        : today
      : direction === 'downgrade'
        ? target.downgradeEffective === 'next_day'
          ? nextDay(today)
          : firstOfNextMonth(now)
        : today
  return { current, target, direction, managed, unitDaily, reserve, balance, covered: direction !== 'upgrade' || balance >= reserve, billingDay }
}

export function quote({ deps, actor, plan }: { deps: Deps; actor: Actor; plan: string }) {
  const tenant = findTenant(deps.db, actor.tenantId)!
  const now = deps.clock.nowUs()
  const q = computeQuote(deps.db, tenant, plan, now)
  return {
    target_plan: q.target.code,
    current_plan: q.current.code,
    direction: q.direction,
    managed_servers: q.managed,
    monthly_price_per_server_usd: formatMoney(q.target.priceMicrosPerServerMonth!),
    unit_daily_rate_usd: q.unitDaily === null ? null : formatMoney(q.unitDaily),
    required_reserve_usd: formatMoney(q.reserve),
    balance_usd: formatMoney(q.balance),
    covered: q.covered,
    server_limit: q.target.serversMax,
    billing_effective_day: q.billingDay,
    quoted_at: formatTimestamp(now),
  }
}

export function changeView(c: ChangeRow) {
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

function pendingChange(db: DbOrTx, tenantId: string): ChangeRow | undefined {
  return db
    .select()
    .from(subscriptionChanges)
    .where(and(eq(subscriptionChanges.tenantId, tenantId), inArray(subscriptionChanges.status, PENDING)))
    .get()
}

export function bumpVersion(tx: DbOrTx, tenant: TenantRow): void {
  tx.update(tenants)
    .set({ subscriptionVersion: tenant.subscriptionVersion + 1 })
    .where(eq(tenants.id, tenant.id))
    .run()
}

/**
 * Switches the tenant's plan: entitlements now; prices from `billingDay` 00:00 UTC, or from the start
 * of the current hour when that is later, so an hour that already passed is never re-priced.
 */
export function switchPlan(tx: DbOrTx, deps: Pick<Deps, 'clock'>, tenantId: string, fromPlan: string | null, toPlan: string, billingDay: string): void {
  const from = Math.max(parseDay(billingDay)!, hourStartOf(deps.clock.nowUs()))
  assignPlan(tx, deps, tenantId, fromPlan, toPlan, from)
  tx.update(tenants).set({ planCode: toPlan }).where(eq(tenants.id, tenantId)).run()
}

export function orderChange({
  deps,
  actor,
  audit,
  input,
  ifMatch,
}: {
  deps: Deps
  actor: Actor
  audit: AuditContext
  input: { target_plan: string; topup_id?: string }
  ifMatch: string | null
}) {
  return withTransaction(deps.db, (tx) => {
    const tenant = findTenant(tx, actor.tenantId)!
    const now = deps.clock.nowUs()
    const q = computeQuote(tx, tenant, input.target_plan, now)
    // A linked top-up must be one of the tenant's own (a foreign id answers like an unknown one).
    if (
      input.topup_id &&
      !tx
        .select({ id: topups.id })
        .from(topups)
        .where(and(eq(topups.tenantId, tenant.id), eq(topups.id, input.topup_id.toLowerCase())))
        .get()
    )
      throw problems.notFound('no such top-up')
    if (q.target.code === q.current.code) throw problems.conflict(`the tenant is already on ${q.target.code}`)
    if (q.target.serversMax !== null && q.managed > q.target.serversMax)
      throw new ProblemError('server_limit_reached', {
        detail: `${q.managed} managed servers exceed the ${q.target.label} limit of ${q.target.serversMax}; decommission some first`,
      })
    const pending = pendingChange(tx, tenant.id)
    if (pending) {
      if (ifMatch === null)
        throw new ProblemError('change_already_pending', {
          detail: 'a plan change is already pending; send If-Match with the subscription version to replace it',
          headers: { ETag: etagOf(tenant.subscriptionVersion) },
        })
      assertIfMatch(ifMatch, etagOf(tenant.subscriptionVersion))
      // A scheduled change whose day has come is no longer replaceable, as it is no longer cancellable.
      if (pending.status === 'scheduled' && pending.effectiveAt <= now)
        throw new ProblemError('change_effective', { detail: 'the pending change is already in effect and will be applied by the next run' })
      tx.update(subscriptionChanges).set({ status: 'cancelled', cancelledAt: now }).where(eq(subscriptionChanges.id, pending.id)).run()
    } else assertIfMatch(ifMatch, etagOf(tenant.subscriptionVersion))
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
      switchPlan(tx, deps, tenant.id, q.current.code, q.target.code, q.billingDay)
    }
    tx.insert(subscriptionChanges).values(row).run()
    bumpVersion(tx, tenant)
    recordAudit(tx, deps, audit, { operation: `subscription.change.${row.status}`, targetKind: 'subscription_change', targetId: row.id })
    return { change: changeView(row), created: row.status !== 'applied' }
  })
}

export function getSubscription({ deps, actor }: { deps: Deps; actor: Actor }) {
  const tenant = findTenant(deps.db, actor.tenantId)!
  const plan = tenant.planCode ? findPlan(deps.db, tenant.planCode) : undefined
  const pending = pendingChange(deps.db, tenant.id)
  const last = deps.db
    .select()
    .from(subscriptionChanges)
    .where(eq(subscriptionChanges.tenantId, tenant.id))
    .orderBy(desc(subscriptionChanges.id))
    .limit(1)
    .get()
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

export function cancelChange({ deps, actor, audit, id }: { deps: Deps; actor: Actor; audit: AuditContext; id: string }) {
  return withTransaction(deps.db, (tx) => {
    const c = tx
      .select()
      .from(subscriptionChanges)
      .where(and(eq(subscriptionChanges.tenantId, actor.tenantId), eq(subscriptionChanges.id, id.toLowerCase())))
      .get()
    if (!c) throw problems.notFound('no such plan change')
    const now = deps.clock.nowUs()
    if (c.status === 'applied') throw new ProblemError('change_already_applied', { detail: 'the change was already applied' })
    if (c.status === 'cancelled' || c.status === 'refused') throw problems.conflict(`the change was already ${c.status}`)
    if (c.status === 'scheduled' && c.effectiveAt <= now)
      throw new ProblemError('change_effective', { detail: 'the change is already in effect and will be applied by the next run' })
    const next = { ...c, status: 'cancelled' as const, cancelledAt: now }
    tx.update(subscriptionChanges).set({ status: 'cancelled', cancelledAt: now }).where(eq(subscriptionChanges.id, c.id)).run()
    bumpVersion(tx, findTenant(tx, actor.tenantId)!)
    recordAudit(tx, deps, audit, { operation: 'subscription.change.cancelled', targetKind: 'subscription_change', targetId: c.id })
    return changeView(next)
  })
}

/**
 * The top-up hook: inside the verified payment's transaction, a pending upgrade linked to this
 * top-up (by change_id, or by the order's topup_id) is applied once the balance covers its reserve.
 */
export function activateOnTopup(tx: Tx, deps: Deps, topup: { id: string; tenantId: string; changeId: string | null }): void {
  const pending = tx
    .select()
    .from(subscriptionChanges)
    .where(and(eq(subscriptionChanges.tenantId, topup.tenantId), eq(subscriptionChanges.status, 'awaiting_payment')))
    .get()
  if (!pending || (pending.id !== topup.changeId && pending.topupId !== topup.id)) return
  const tenant = findTenant(tx, topup.tenantId)!
  const now = deps.clock.nowUs()
  let q: Quote
  try {
    q = computeQuote(tx, tenant, pending.targetPlan, now)
  } catch (e) {
    // The target became contract-priced or left the catalogue (or the tenant lost its plan): the
    // payment is still credited; the change keeps waiting until it is cancelled or replaced.
    if (e instanceof ProblemError) return
    throw e
  }
  if (q.direction === 'upgrade' && !q.covered) return // paid too little: it keeps waiting
  switchPlan(tx, deps, tenant.id, tenant.planCode, pending.targetPlan, q.billingDay)
  tx.update(subscriptionChanges)
    .set({ status: 'applied', appliedAt: now, topupId: pending.topupId ?? topup.id, billingEffectiveDay: q.billingDay })
    .where(eq(subscriptionChanges.id, pending.id))
    .run()
  bumpVersion(tx, tenant)
  recordSystemEvent(tx, deps, tenant.id, 'subscription.change.applied', `${pending.targetPlan} after top-up ${topup.id}`)
}
