import { and, desc, eq, gte, like, lt, or, sql, type SQL } from 'drizzle-orm'
import { balances, billingState, chargeCalculations, ledgerEntries } from '../../../db/schema/billing'
import type { DbOrTx } from '../../../db/client'
import { perDeps, type Deps } from '../../platform/context'
import { splitCharge } from './split'

export type LedgerRow = typeof ledgerEntries.$inferSelect
export type ChargeCalculationRow = typeof chargeCalculations.$inferSelect

/** Prepared statements on the transaction's own connection: appendEntry runs once per tenant per hour. */
const statements = perDeps((deps) => ({
  balance: deps.sqlite.prepare<{ balance_micros: number; last_seq: number }, [string]>('SELECT balance_micros, last_seq FROM balances WHERE tenant_id = ?'),
  insertEntry: deps.sqlite.prepare(
    'INSERT INTO ledger_entries (id, tenant_id, seq, kind, amount_micros, balance_after_micros, occurred_at, charge_day, charge_hour, detail, calculation_id, payment_ref, topup_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ),
  upsertBalance: deps.sqlite.prepare(
    'INSERT INTO balances (tenant_id, balance_micros, last_seq, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (tenant_id) DO UPDATE SET balance_micros = excluded.balance_micros, last_seq = excluded.last_seq, updated_at = excluded.updated_at',
  ),
  // The partial unique index ledger_one_charge_per_hour answers this with one lookup.
  charged: deps.sqlite.prepare<{ one: number }, [string, number]>(
    "SELECT 1 AS one FROM ledger_entries WHERE tenant_id = ? AND charge_hour = ? AND kind = 'charge'",
  ),
  insertCalculation: deps.sqlite.prepare(
    'INSERT INTO charge_calculations (id, tenant_id, charge_hour, plan_code, price_micros_per_server_month, days_in_month, servers, server_ids, amount_micros, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ),
}))

/** The running balance and the last entry's sequence number (zero for a tenant with no entry). */
export function currentBalance(deps: Deps, tenantId: string): { balance: number; seq: number } {
  const r = statements(deps).balance.get(tenantId)
  return { balance: r?.balance_micros ?? 0, seq: r?.last_seq ?? 0 }
}

/** Writes one entry and the balance it leaves. */
export function writeEntry(deps: Deps, row: LedgerRow): void {
  const q = statements(deps)
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
  q.upsertBalance.run(row.tenantId, row.balanceAfterMicros, row.seq, row.createdAt)
}

export function balanceOf(db: DbOrTx, tenantId: string): number {
  return db.select().from(balances).where(eq(balances.tenantId, tenantId)).get()?.balanceMicros ?? 0
}

/** True when this provider payment (`provider:payment id`) was credited already. */
export function paymentCredited(db: DbOrTx, paymentRef: string): boolean {
  return db.select({ id: ledgerEntries.id }).from(ledgerEntries).where(eq(ledgerEntries.paymentRef, paymentRef)).get() !== undefined
}

export type LedgerFilter = { kind?: LedgerRow['kind']; fromUs?: number; toUs?: number }
export type LedgerPosition = { occurredAt: number; id: string }

/** Newest first by occurred_at (then id), half-open [from, to). */
export function listLedger(db: DbOrTx, tenantId: string, f: LedgerFilter, before: LedgerPosition | undefined, limit: number): LedgerRow[] {
  const where: SQL[] = [eq(ledgerEntries.tenantId, tenantId)]
  if (f.kind) where.push(eq(ledgerEntries.kind, f.kind))
  if (f.fromUs !== undefined) where.push(gte(ledgerEntries.occurredAt, f.fromUs))
  if (f.toUs !== undefined) where.push(lt(ledgerEntries.occurredAt, f.toUs))
  if (before)
    where.push(or(lt(ledgerEntries.occurredAt, before.occurredAt), and(eq(ledgerEntries.occurredAt, before.occurredAt), lt(ledgerEntries.id, before.id)))!)
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

/** The daily journal rows (one per UTC day with charges), newest first, before `beforeDay`. */
export function chargeDayRows(db: DbOrTx, tenantId: string, beforeDay: string | undefined, limit: number) {
  const where = [eq(ledgerEntries.tenantId, tenantId), eq(ledgerEntries.kind, 'charge')]
  if (beforeDay) where.push(lt(ledgerEntries.chargeDay, beforeDay))
  return db
    .select({
      day: ledgerEntries.chargeDay,
      amount: sql<number>`sum(${ledgerEntries.amountMicros})`,
      hours: sql<number>`count(*)`,
      serverHours: sql<number>`sum(${chargeCalculations.servers})`,
    })
    .from(ledgerEntries)
    .innerJoin(chargeCalculations, eq(chargeCalculations.id, ledgerEntries.calculationId))
    .where(and(...where))
    .groupBy(ledgerEntries.chargeDay)
    .orderBy(desc(ledgerEntries.chargeDay))
    .limit(limit)
    .all()
}

export function chargeCalculationsBetween(db: DbOrTx, tenantId: string, fromUs: number, toUs: number): ChargeCalculationRow[] {
  return db
    .select()
    .from(chargeCalculations)
    .where(and(eq(chargeCalculations.tenantId, tenantId), gte(chargeCalculations.chargeHour, fromUs), lt(chargeCalculations.chargeHour, toUs)))
    .all()
}

/** Runs once per tenant per hour inside a charge batch: a statement prepared once, on the transaction's connection. */
export function insertChargeCalculation(deps: Deps, row: ChargeCalculationRow): void {
  statements(deps).insertCalculation.run(
    row.id,
    row.tenantId,
    row.chargeHour,
    row.planCode,
    row.priceMicrosPerServerMonth,
    row.daysInMonth,
    row.servers,
    JSON.stringify(row.serverIds),
    row.amountMicros,
    row.createdAt,
  )
}

/** Copies committed WAL pages into the database file: a PASSIVE checkpoint, which waits for no reader or writer. */
export function checkpointWal(deps: Deps): void {
  deps.sqlite.exec('PRAGMA wal_checkpoint(PASSIVE)')
}

/** True when the tenant's charge for hour `h` is booked already (by this run, an earlier one or another process). */
export function chargedFor(deps: Deps, tenantId: string, h: number): boolean {
  return statements(deps).charged.get(tenantId, h) !== null
}

/** billing.charge's watermark: every hour before it is booked for every tenant. */
export function chargedUntil(db: DbOrTx, key: string): number | undefined {
  return db.select().from(billingState).where(eq(billingState.key, key)).get()?.chargedUntil
}

export function setChargedUntil(tx: DbOrTx, key: string, until: number, now: number): void {
  tx.insert(billingState)
    .values({ key, chargedUntil: until, updatedAt: now })
    .onConflictDoUpdate({ target: billingState.key, set: { chargedUntil: until, updatedAt: now } })
    .run()
}

/**
 * A tenant's hour that billing.charge could not book (its part failed, or the tenant was waiting out
 * a backoff) while the watermark moved past it: a row of `billing_state` keyed `owed:<tenant>:<hour>`
 * with `charged_until` = the hour, written in the transaction of the batch that left it behind and
 * deleted in the one that books it (docs/billing.md "A tenant whose charge fails").
 */
const OWED = 'owed:'
const owedKey = (tenantId: string, hourUs: number) => `${OWED}${tenantId}:${hourUs}`

export function markHourOwed(tx: DbOrTx, tenantId: string, hourUs: number, now: number): void {
  setChargedUntil(tx, owedKey(tenantId, hourUs), hourUs, now)
}

export function clearHourOwed(tx: DbOrTx, tenantId: string, hourUs: number): void {
  tx.delete(billingState)
    .where(eq(billingState.key, owedKey(tenantId, hourUs)))
    .run()
}

/** Every owed tenant-hour, oldest hour first (then tenant id). */
export function owedHours(db: DbOrTx): { tenantId: string; hourUs: number }[] {
  return (
    db
      .select()
      .from(billingState)
      // LIKE, not a range: a range on text follows the collation, which on PostgreSQL may weigh punctuation differently.
      .where(like(billingState.key, `${OWED}%`))
      .all()
      .map((r) => ({ tenantId: r.key.slice(OWED.length, r.key.lastIndexOf(':')), hourUs: r.chargedUntil }))
      .sort((a, b) => a.hourUs - b.hourUs || (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : 0))
  )
}

/** Server-hours the tenant was charged for in [fromUs, toUs): the billable managed servers of each charged hour, summed. */
export function billableServerHours(db: DbOrTx, tenantId: string, fromUs: number, toUs: number): number {
  return chargeCalculationsBetween(db, tenantId, fromUs, toUs).reduce((n, c) => n + c.servers, 0)
}

/** What the tenant was charged per server and UTC day in [fromUs, toUs), micro-dollars (each hour split as the per-server CSV splits it). */
export function chargesPerServerDay(db: DbOrTx, tenantId: string, fromUs: number, toUs: number): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>()
  for (const c of chargeCalculationsBetween(db, tenantId, fromUs, toUs)) {
    const day = new Date(Math.floor(c.chargeHour / 1000)).toISOString().slice(0, 10)
    for (const [id, share] of splitCharge(c.amountMicros, c.serverIds)) {
      const byDay = out.get(id) ?? new Map<string, number>()
      byDay.set(day, (byDay.get(day) ?? 0) + share)
      out.set(id, byDay)
    }
  }
  return out
}

export type ReportEntry = {
  kind: LedgerRow['kind']
  amountMicros: number
  occurredAt: number
  /** A charge's amount split over the servers its hour charged (as booked: negative); empty for other kinds. */
  servers: [string, number][]
}

/** The tenant's entries with occurred_at in [fromUs, toUs), oldest first, each charge split over its servers (the spend report). */
export function entriesForReport(db: DbOrTx, tenantId: string, fromUs: number, toUs: number): ReportEntry[] {
  return db
    .select({
      kind: ledgerEntries.kind,
      amountMicros: ledgerEntries.amountMicros,
      occurredAt: ledgerEntries.occurredAt,
      serverIds: chargeCalculations.serverIds,
    })
    .from(ledgerEntries)
    .leftJoin(chargeCalculations, eq(chargeCalculations.id, ledgerEntries.calculationId))
    .where(and(eq(ledgerEntries.tenantId, tenantId), gte(ledgerEntries.occurredAt, fromUs), lt(ledgerEntries.occurredAt, toUs)))
    .orderBy(ledgerEntries.occurredAt, ledgerEntries.seq)
    .all()
    .map((r) => ({
      kind: r.kind,
      amountMicros: r.amountMicros,
      occurredAt: r.occurredAt,
      servers: r.kind === 'charge' && r.serverIds ? splitCharge(r.amountMicros, r.serverIds) : [],
    }))
}
