import { withTransaction, type DbOrTx, type Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import type { TenantWalk } from '../../platform/jobs'
import { formatMoney } from '../../platform/money'
import { formatNullableTimestamp, formatTimestamp, US_PER_HOUR } from '../../platform/time'
import { recordSystemEvent } from '../audit'
import { accountStateOf, setAccountState, tenantsInGraceBefore, type TenantRow } from '../tenants'
import { currentBalance, writeEntry, type LedgerRow } from './ledger.repository'

type NewEntry = Pick<LedgerRow, 'tenantId' | 'kind' | 'amountMicros' | 'occurredAt' | 'detail'> &
  Partial<Pick<LedgerRow, 'chargeDay' | 'chargeHour' | 'calculationId' | 'paymentRef' | 'topupId'>>

/**
 * Appends one entry and moves the balance in the caller's transaction; the account state follows
 * the balance (followBalance below). Returns the written row.
 */
export function appendEntry(tx: DbOrTx, deps: Deps, e: NewEntry): LedgerRow {
  const now = deps.clock.nowUs()
  const before = currentBalance(deps, e.tenantId)
  const balance = before.balance + e.amountMicros
  if (!Number.isSafeInteger(balance)) throw new RangeError('balance out of range')
  const row: LedgerRow = {
    id: deps.newId(),
    tenantId: e.tenantId,
    seq: before.seq + 1,
    kind: e.kind,
    amountMicros: e.amountMicros,
    balanceAfterMicros: balance,
    occurredAt: e.occurredAt,
    chargeDay: e.chargeDay ?? null,
    chargeHour: e.chargeHour ?? null,
    detail: e.detail.slice(0, 512),
    calculationId: e.calculationId ?? null,
    paymentRef: e.paymentRef ?? null,
    topupId: e.topupId ?? null,
    createdAt: now,
  }
  writeEntry(deps, row)
  // A debit that leaves the balance at zero or above moves no account state: out of grace the
  // balance was already at or above zero (grace always means below zero), and only a top-up
  // unfreezes. Every hourly charge of a covered account takes this path: no lookup.
  if (e.amountMicros <= 0 && balance >= 0) return row
  const state = accountStateOf(tx, e.tenantId)
  if (state) followBalance(tx, deps, e.tenantId, state, balance, e.kind)
  return row
}

/**
 * Account states: a balance below zero starts grace; grace longer than GRACE_PERIOD_HOURS freezes
 * (freezeOverdue, run by billing.charge); a top-up that brings the balance above zero is the only
 * way out of a freeze; out of grace, any entry that brings the balance back to zero or above.
 */
function followBalance(tx: DbOrTx, deps: Deps, tenantId: string, state: TenantRow['accountState'], balance: number, kind: LedgerRow['kind']): void {
  const now = deps.clock.nowUs()
  if (state === 'active' && balance < 0) {
    setAccountState(tx, tenantId, { accountState: 'grace', graceSince: now })
    recordSystemEvent(tx, deps, tenantId, 'account.grace', `balance ${formatMoney(balance)} below zero`)
    deps.events.emit('tenant.account_state_changed', { tx: tx as Tx, tenantId, state: 'grace' })
  } else if (state === 'grace' && balance >= 0) {
    setAccountState(tx, tenantId, { accountState: 'active', graceSince: null })
    recordSystemEvent(tx, deps, tenantId, 'account.active', `balance ${formatMoney(balance)} back to zero or above`)
  } else if (state === 'frozen' && kind === 'topup' && balance > 0) {
    setAccountState(tx, tenantId, { accountState: 'active', graceSince: null, frozenAt: null })
    recordSystemEvent(tx, deps, tenantId, 'account.unfrozen', `a top-up brought the balance to ${formatMoney(balance)}`)
  }
}

/**
 * Freezes every tenant whose grace has lasted longer than the grace period, each in its own
 * savepoint and its own part of billing.charge's per-tenant error boundary (scope `freeze`): one
 * whose freeze throws (a reaction to it) stays in grace, is reported and tried again after its
 * backoff; the others are frozen. Answers how many were.
 */
export function freezeOverdue(tx: Tx, deps: Deps, walk: TenantWalk): number {
  const now = deps.clock.nowUs()
  const overdue = tenantsInGraceBefore(tx, now - deps.config.gracePeriodHours * US_PER_HOUR)
  let frozen = 0
  for (const t of overdue) {
    const done = walk.runSync(
      t.id,
      () =>
        withTransaction(tx, (one) => {
          setAccountState(one, t.id, { accountState: 'frozen', frozenAt: now })
          recordSystemEvent(one, deps, t.id, 'account.frozen', `in grace for more than ${deps.config.gracePeriodHours} h`)
          deps.events.emit('tenant.account_state_changed', { tx: one, tenantId: t.id, state: 'frozen' })
          return true
        }),
      'freeze',
    )
    if (done) frozen++
  }
  return frozen
}

export function ledgerView(r: LedgerRow) {
  return {
    id: r.id,
    tenant_id: r.tenantId,
    kind: r.kind,
    amount_usd: formatMoney(r.amountMicros),
    balance_after_usd: formatMoney(r.balanceAfterMicros),
    occurred_at: formatTimestamp(r.occurredAt),
    charge_day: r.chargeDay,
    charge_hour: formatNullableTimestamp(r.chargeHour),
    detail: r.detail,
    calculation_id: r.calculationId,
    created_at: formatTimestamp(r.createdAt),
  }
}
