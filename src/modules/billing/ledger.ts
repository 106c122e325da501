import { and, desc, eq, gte, lt, or, sql, type SQL } from 'drizzle-orm'
import type { Database, Statement } from 'bun:sqlite'
import { balances, ledgerEntries, tenants } from '../../../db/schema'
import type { DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { formatMoney } from '../../platform/money'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { recordSystemEvent } from '../audit/audit.service'

export type LedgerRow = typeof ledgerEntries.$inferSelect
export type NewEntry = Pick<LedgerRow, 'tenantId' | 'kind' | 'amountMicros' | 'occurredAt' | 'detail'> &
  Partial<Pick<LedgerRow, 'chargeDay' | 'chargeHour' | 'calculationId' | 'paymentRef' | 'topupId'>>

/**
 * Appends one entry and moves the balance in the caller's transaction; the account state follows
 * the balance (src/modules/billing/account-state rules below). Returns the written row.
 */
export function appendEntry(tx: DbOrTx, deps: Pick<Deps, 'newId' | 'clock' | 'config' | 'sqlite'>, e: NewEntry): LedgerRow {
  const q = statements(deps.sqlite)
  const now = deps.clock.nowUs()
  const bal = q.balance.get(e.tenantId) as { balance_micros: number; last_seq: number } | null
  const balance = (bal?.balance_micros ?? 0) + e.amountMicros
  const seq = (bal?.last_seq ?? 0) + 1
  if (!Number.isSafeInteger(balance)) throw new RangeError('balance out of range')
  const row: LedgerRow = {
    id: deps.newId(),
    tenantId: e.tenantId,
    seq,
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
  // Prepared statements on the transaction's own connection: this runs once per tenant per hour.
  q.insertEntry.run(
    row.id,
    row.tenantId,
    row.seq,
    row.kind,
    row.amountMicros,
    row.balanceAfterMicros,
    row.occurredAt,
    row.chargeDay,
    row.chargeHour,
    row.detail,
    row.calculationId,
    row.paymentRef,
    row.topupId,
    row.createdAt,
  )
  q.upsertBalance.run(e.tenantId, balance, seq, now)
  const state = (q.accountState.get(e.tenantId) as { account_state: 'active' | 'grace' | 'frozen' } | null)?.account_state
  if (state) followBalance(tx, deps, e.tenantId, state, balance, e.kind)
  return row
}

type LedgerStatements = { balance: Statement; insertEntry: Statement; upsertBalance: Statement; accountState: Statement }
const cache = new WeakMap<Database, LedgerStatements>()
function statements(sqlite: Database): LedgerStatements {
  let s = cache.get(sqlite)
  if (!s) {
    s = {
      balance: sqlite.prepare('SELECT balance_micros, last_seq FROM balances WHERE tenant_id = ?'),
      insertEntry: sqlite.prepare(
        'INSERT INTO ledger_entries (id, tenant_id, seq, kind, amount_micros, balance_after_micros, occurred_at, charge_day, charge_hour, detail, calculation_id, payment_ref, topup_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      upsertBalance: sqlite.prepare(
        'INSERT INTO balances (tenant_id, balance_micros, last_seq, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (tenant_id) DO UPDATE SET balance_micros = excluded.balance_micros, last_seq = excluded.last_seq, updated_at = excluded.updated_at',
      ),
      accountState: sqlite.prepare('SELECT account_state FROM tenants WHERE id = ?'),
    }
    cache.set(sqlite, s)
  }
  return s
}

/** GET /subscription shows the account state, so a state change moves its version (and ETag) on. */
const bumped = sql`${tenants.subscriptionVersion} + 1`

/**
 * Account states: a balance below zero starts grace; grace longer than GRACE_PERIOD_HOURS freezes
 * (freezeOverdue, run by billing.charge); a top-up that brings the balance above zero is the only
 * way out of a freeze; out of grace, any entry that brings the balance back to zero or above.
 */
function followBalance(
  tx: DbOrTx,
  deps: Pick<Deps, 'newId' | 'clock'>,
  tenantId: string,
  state: 'active' | 'grace' | 'frozen',
  balance: number,
  kind: LedgerRow['kind'],
): void {
  const now = deps.clock.nowUs()
  if (state === 'active' && balance < 0) {
    tx.update(tenants).set({ accountState: 'grace', graceSince: now, subscriptionVersion: bumped }).where(eq(tenants.id, tenantId)).run()
    recordSystemEvent(tx, deps, tenantId, 'account.grace', `balance ${formatMoney(balance)} below zero`)
  } else if (state === 'grace' && balance >= 0) {
    tx.update(tenants).set({ accountState: 'active', graceSince: null, subscriptionVersion: bumped }).where(eq(tenants.id, tenantId)).run()
    recordSystemEvent(tx, deps, tenantId, 'account.active', `balance ${formatMoney(balance)} back to zero or above`)
  } else if (state === 'frozen' && kind === 'topup' && balance > 0) {
    tx.update(tenants).set({ accountState: 'active', graceSince: null, frozenAt: null, subscriptionVersion: bumped }).where(eq(tenants.id, tenantId)).run()
    recordSystemEvent(tx, deps, tenantId, 'account.unfrozen', `a top-up brought the balance to ${formatMoney(balance)}`)
  }
}

/** Freezes every tenant whose grace has lasted longer than the grace period. */
export function freezeOverdue(tx: DbOrTx, deps: Pick<Deps, 'newId' | 'clock' | 'config'>): number {
  const now = deps.clock.nowUs()
  const cutoff = now - deps.config.gracePeriodHours * 3_600_000_000
  const overdue = tx
    .select()
    .from(tenants)
    .where(and(eq(tenants.accountState, 'grace'), lt(tenants.graceSince, cutoff)))
    .all()
  for (const t of overdue) {
    tx.update(tenants).set({ accountState: 'frozen', frozenAt: now, subscriptionVersion: bumped }).where(eq(tenants.id, t.id)).run()
    recordSystemEvent(tx, deps, t.id, 'account.frozen', `in grace for more than ${deps.config.gracePeriodHours} h`)
  }
  return overdue.length
}

export function balanceOf(db: DbOrTx, tenantId: string): number {
  return db.select().from(balances).where(eq(balances.tenantId, tenantId)).get()?.balanceMicros ?? 0
}

export type LedgerFilter = { kind?: LedgerRow['kind']; fromUs?: number; toUs?: number; before?: { occurredAt: number; id: string } | null }

/** Newest first by occurred_at (then id), half-open [from, to). */
export function listLedger(db: DbOrTx, tenantId: string, f: LedgerFilter, limit: number): LedgerRow[] {
  const where: SQL[] = [eq(ledgerEntries.tenantId, tenantId)]
  if (f.kind) where.push(eq(ledgerEntries.kind, f.kind))
  if (f.fromUs !== undefined) where.push(gte(ledgerEntries.occurredAt, f.fromUs))
  if (f.toUs !== undefined) where.push(lt(ledgerEntries.occurredAt, f.toUs))
  if (f.before)
    where.push(
      or(lt(ledgerEntries.occurredAt, f.before.occurredAt), and(eq(ledgerEntries.occurredAt, f.before.occurredAt), lt(ledgerEntries.id, f.before.id)))!,
    )
  return db
    .select()
    .from(ledgerEntries)
    .where(and(...where))
    .orderBy(desc(ledgerEntries.occurredAt), desc(ledgerEntries.id))
    .limit(limit)
    .all()
}

/** Spend in [from, to): minus the sum of the non-topup rows (charges and adjustments). */
export function spendBetween(db: DbOrTx, tenantId: string, fromUs: number, toUs: number): number {
  const r = db
    .select({ s: sql<number | null>`sum(${ledgerEntries.amountMicros})` })
    .from(ledgerEntries)
    .where(
      and(
        eq(ledgerEntries.tenantId, tenantId),
        sql`${ledgerEntries.kind} <> 'topup'`,
        gte(ledgerEntries.occurredAt, fromUs),
        lt(ledgerEntries.occurredAt, toUs),
      ),
    )
    .get()
  return -Number(r?.s ?? 0)
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
