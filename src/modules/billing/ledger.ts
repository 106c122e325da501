import { inTransaction, withTransaction, type DbOrTx, type Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import type { TenantWalk } from '../../platform/jobs'
import { formatMoney } from '../../platform/money'
import { formatNullableTimestamp, formatTimestamp, US_PER_HOUR } from '../../platform/time'
import { recordSystemEvent } from '../audit'
import { accountStateOf, setAccountState, tenantsInGraceBefore, type TenantRow } from '../tenants'
import { balancesOf, currentBalance, writeEntries, writeEntry, type LedgerRow } from './ledger.repository'

type NewEntry = Pick<LedgerRow, 'tenantId' | 'kind' | 'amountMicros' | 'occurredAt' | 'detail'> &
  Partial<Pick<LedgerRow, 'chargeDay' | 'chargeHour' | 'calculationId' | 'paymentRef' | 'topupId'>>

/**
 * Appends one entry and moves the balance in the caller's transaction; the account state follows
 * the balance (followBalance below). Returns the written row.
 *
 * The balance read, the entry (its sequence number the last one's plus one) and the new balance are
 * one read-modify-write: it must run inside the caller's transaction, where no other request's
 * statement runs between them (SQLite's write turn; PostgreSQL's SERIALIZABLE runs the transaction
 * again on a conflict), and a caller appends a tenant's entries one after the other, each awaited.
 */
export async function appendEntry(tx: DbOrTx, deps: Deps, e: NewEntry): Promise<LedgerRow> {
  if (!inTransaction(tx)) throw new Error("appendEntry runs inside the caller's transaction (withTransaction)")
  const row = entryRow(deps, e, await currentBalance(tx, e.tenantId), deps.clock.nowUs())
  await writeEntry(tx, row)
  if (movesAccountState(e, row)) await followEntry(tx, deps, e, row)
  return row
}

/**
 * appendEntry for many tenants at once, one entry each (a charge batch): their balances in one
 * read, the entries and balances written together, then each tenant's account state follows its
 * balance as appendEntry's does, in order. The same read-modify-write in the caller's transaction;
 * an entry that cannot be booked (a balance out of range) throws before anything is written.
 */
export async function appendEntries(tx: DbOrTx, deps: Deps, entries: NewEntry[]): Promise<LedgerRow[]> {
  if (!inTransaction(tx)) throw new Error("appendEntries runs inside the caller's transaction (withTransaction)")
  const now = deps.clock.nowUs()
  const before = await balancesOf(
    tx,
    entries.map((e) => e.tenantId),
  )
  const seen = new Set<string>()
  const rows = entries.map((e) => {
    if (seen.has(e.tenantId)) throw new Error('appendEntries takes one entry per tenant')
    seen.add(e.tenantId)
    return entryRow(deps, e, before.get(e.tenantId) ?? { balance: 0, seq: 0 }, now)
  })
  await writeEntries(tx, rows)
  for (let i = 0; i < entries.length; i++) if (movesAccountState(entries[i]!, rows[i]!)) await followEntry(tx, deps, entries[i]!, rows[i]!)
  return rows
}

/** The row an entry becomes after the tenant's balance `before`: its sequence number the last one's plus one. */
function entryRow(deps: Deps, e: NewEntry, before: { balance: number; seq: number }, now: number): LedgerRow {
  const balance = before.balance + e.amountMicros
  if (!Number.isSafeInteger(balance)) throw new RangeError('balance out of range')
  return {
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
}

/**
 * False for a debit that leaves the balance at zero or above: it moves no account state (out of
 * grace the balance was already at or above zero, as grace always means below zero, and only a
 * top-up unfreezes). Every hourly charge of a covered account takes this path: no lookup.
 */
const movesAccountState = (e: NewEntry, row: LedgerRow) => !(e.amountMicros <= 0 && row.balanceAfterMicros >= 0)

/** The account state follows the balance an entry left (followBalance). */
async function followEntry(tx: DbOrTx, deps: Deps, e: NewEntry, row: LedgerRow): Promise<void> {
  const state = await accountStateOf(tx, e.tenantId)
  if (state) await followBalance(tx, deps, e.tenantId, state, row.balanceAfterMicros, e.kind)
}

/**
 * Account states: a balance below zero starts grace; grace longer than GRACE_PERIOD_HOURS freezes
 * (freezeOverdue, run by billing.charge); a top-up that brings the balance above zero is the only
 * way out of a freeze; out of grace, any entry that brings the balance back to zero or above.
 */
async function followBalance(
  tx: DbOrTx,
  deps: Deps,
  tenantId: string,
  state: TenantRow['accountState'],
  balance: number,
  kind: LedgerRow['kind'],
): Promise<void> {
  const now = deps.clock.nowUs()
  if (state === 'active' && balance < 0) {
    await setAccountState(tx, tenantId, { accountState: 'grace', graceSince: now })
    await recordSystemEvent(tx, deps, tenantId, 'account.grace', `balance ${formatMoney(balance)} below zero`)
    await deps.events.emit('tenant.account_state_changed', { tx: tx as Tx, tenantId, state: 'grace' })
  } else if (state === 'grace' && balance >= 0) {
    await setAccountState(tx, tenantId, { accountState: 'active', graceSince: null })
    await recordSystemEvent(tx, deps, tenantId, 'account.active', `balance ${formatMoney(balance)} back to zero or above`)
  } else if (state === 'frozen' && kind === 'topup' && balance > 0) {
    await setAccountState(tx, tenantId, { accountState: 'active', graceSince: null, frozenAt: null })
    await recordSystemEvent(tx, deps, tenantId, 'account.unfrozen', `a top-up brought the balance to ${formatMoney(balance)}`)
  }
}

/**
 * Freezes every tenant whose grace has lasted longer than the grace period, each in its own
 * savepoint and its own part of billing.charge's per-tenant error boundary (scope `freeze`): one
 * whose freeze throws (a reaction to it) stays in grace, is reported and tried again after its
 * backoff; the others are frozen. Answers how many were.
 */
export async function freezeOverdue(tx: Tx, deps: Deps, walk: TenantWalk): Promise<number> {
  const now = deps.clock.nowUs()
  const overdue = await tenantsInGraceBefore(tx, now - deps.config.gracePeriodHours * US_PER_HOUR)
  let frozen = 0
  for (const t of overdue) {
    const done = await walk.run(
      t.id,
      () =>
        withTransaction(tx, async (one) => {
          await setAccountState(one, t.id, { accountState: 'frozen', frozenAt: now })
          await recordSystemEvent(one, deps, t.id, 'account.frozen', `in grace for more than ${deps.config.gracePeriodHours} h`)
          await deps.events.emit('tenant.account_state_changed', { tx: one, tenantId: t.id, state: 'frozen' })
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
