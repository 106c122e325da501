import { withTransaction, type DbOrTx, type Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { divideRounded, formatMoney } from '../../platform/money'
import { daysInMonth, formatTimestamp, US_PER_HOUR, utcDay } from '../../platform/time'
import { plansDuringHour } from '../plans'
import { appendEntry, freezeOverdue } from './ledger'
import { chargedUntil, insertChargeCalculation, setChargedUntil, tenantsChargedFor } from './ledger.repository'
import { firstServerEnrolledAt, serversManagedDuring } from '../fleet'

/**
 * Hourly charges (docs/billing.md): each managed server costs the plan's monthly price ÷ days of the
 * UTC month ÷ 24 for every hour it is managed. A server counts for an hour when it was enrolled
 * before the hour ended and not decommissioned before it began.
 *
 * `billing.charge` books hour H once it is 1 h 15 min old (created_at ≈ H + 1h15m; occurred_at and
 * charge_hour = H). Each hour is one transaction for every tenant, followed by the watermark, so a
 * crash mid-run books nothing of that hour; a unique index (tenant, charge_hour) makes a second
 * booking impossible whatever reruns, overlapping processes or catch-ups after downtime do.
 */
const BOOKING_LAG_US = 75 * 60 * 1_000_000
const WATERMARK = 'charges'

const hourStart = (us: number) => Math.floor(us / US_PER_HOUR) * US_PER_HOUR

/** Micro-USD for `servers` servers during one hour of a month with `days` days. */
function hourlyAmount(priceMicrosPerServerMonth: number, servers: number, days: number): number {
  return divideRounded(priceMicrosPerServerMonth * servers, days * 24)
}

/** Below this many days of balance at the current rate, the owner is warned (notifications, `balance`; alerts, `low_balance`). */
export const LOW_BALANCE_DAYS = 3

export function runHourlyCharges(deps: Deps, options: { maxHours?: number } = {}): string {
  const now = deps.clock.nowUs()
  const lastBookable = hourStart(now - BOOKING_LAG_US) // the latest hour H with H + 1h15m <= now
  let hour = chargedUntil(deps.db, WATERMARK) ?? firstHour(deps.db)
  if (hour === null) {
    withTransaction(deps.db, (tx) => freezeOverdue(tx, deps))
    return 'no servers yet; nothing to charge'
  }
  let hours = 0
  let rows = 0
  const max = options.maxHours ?? 24 * 400
  while (hour <= lastBookable && hours < max) {
    const h = hour
    const booked = withTransaction(deps.db, (tx) => {
      // Another run may have moved on meanwhile: the watermark only ever moves forward.
      const current = chargedUntil(tx, WATERMARK)
      if (current !== undefined && current > h) return null
      const n = chargeHour(tx, deps, h)
      setChargedUntil(tx, WATERMARK, h + US_PER_HOUR, deps.clock.nowUs())
      return n
    })
    if (booked === null) break
    rows += booked
    hour += US_PER_HOUR
    hours++
  }
  const frozen = withTransaction(deps.db, (tx) => freezeOverdue(tx, deps))
  return `booked ${hours} hours (${rows} charges) up to ${formatTimestamp(hour)}; ${frozen} accounts frozen`
}

/** Billing starts with the hour of the first server ever enrolled. */
function firstHour(db: DbOrTx): number | null {
  const first = firstServerEnrolledAt(db)
  return first === null ? null : hourStart(first)
}

/** Books hour `h` for every tenant with managed servers and a priced plan; returns rows written. */
function chargeHour(tx: DbOrTx, deps: Deps, h: number): number {
  const end = h + US_PER_HOUR
  const managed = serversManagedDuring(tx, h, end)
  const byTenant = new Map<string, string[]>()
  for (const m of managed) {
    const list = byTenant.get(m.tenantId)
    if (list) list.push(m.serverId)
    else byTenant.set(m.tenantId, [m.serverId])
  }
  if (byTenant.size === 0) return 0
  const day = utcDay(h)
  // The plan and price in force during this hour, not the ones of today (plan history).
  const tenantPlans = plansDuringHour(tx, h)
  const date = new Date(h / 1000)
  const days = daysInMonth(date.getUTCFullYear(), date.getUTCMonth() + 1)
  const now = deps.clock.nowUs()
  let written = 0
  const booked = tenantsChargedFor(tx, h)
  for (const [tenantId, serverIds] of byTenant) {
    const plan = tenantPlans.get(tenantId)
    if (!plan || plan.price === null || plan.price === 0) continue // free or contract-priced: nothing booked here
    if (booked.has(tenantId)) continue
    serverIds.sort()
    const amount = hourlyAmount(plan.price, serverIds.length, days)
    const calculationId = deps.newId()
    insertChargeCalculation(tx, {
      id: calculationId,
      tenantId,
      chargeHour: h,
      planCode: plan.planCode!,
      priceMicrosPerServerMonth: plan.price,
      daysInMonth: days,
      servers: serverIds.length,
      serverIds,
      amountMicros: amount,
      createdAt: now,
    })
    const entry = appendEntry(tx, deps, {
      tenantId,
      kind: 'charge',
      amountMicros: -amount,
      occurredAt: h,
      chargeDay: day,
      chargeHour: h,
      calculationId,
      detail: `${serverIds.length} server${serverIds.length === 1 ? '' : 's'} × ${plan.planCode} ${formatMoney(plan.price)} USD/month ÷ ${days} days ÷ 24 h`,
    })
    // Days of balance left at this hour's rate: a warning while there is still time to top up.
    const daysLeft = entry.balanceAfterMicros / (amount * 24)
    if (amount > 0 && entry.balanceAfterMicros >= 0 && daysLeft < LOW_BALANCE_DAYS)
      deps.events.emit('tenant.balance_low', { tx: tx as Tx, tenantId, daysLeft, balanceMicros: entry.balanceAfterMicros })
    written++
  }
  return written
}
