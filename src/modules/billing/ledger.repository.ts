import { and, desc, eq, gte, like, lt, or, sql, type SQL } from 'drizzle-orm'
import { balances, billingState, chargeCalculations, ledgerEntries } from '../../../db/schema/billing'
import type { DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { splitCharge } from './split'

export type LedgerRow = typeof ledgerEntries.$inferSelect
export type ChargeCalculationRow = typeof chargeCalculations.$inferSelect

/**
 * appendEntry's statements, hand-written for its hot path (once per tenant per hour inside a charge
 * batch). Built with the `sql` tag, so each database gets its own placeholders; the text is the same
 * on every call, so the SQLite executor prepares each once (db/sqlite-executor.ts). They run on the
 * connection of the caller's transaction: the balance read and the writes after it are one
 * read-modify-write of that transaction.
 */

/** The running balance and the last entry's sequence number (zero for a tenant with no entry), in the caller's transaction. */
export async function currentBalance(tx: DbOrTx, tenantId: string): Promise<{ balance: number; seq: number }> {
  const r = await tx.get<{ balance_micros: number; last_seq: number } | undefined>(
    sql`SELECT balance_micros, last_seq FROM balances WHERE tenant_id = ${tenantId}`,
  )
  return { balance: Number(r?.balance_micros ?? 0), seq: Number(r?.last_seq ?? 0) }
}

/** Writes one entry and the balance it leaves, in the caller's transaction. */
export async function writeEntry(tx: DbOrTx, row: LedgerRow): Promise<void> {
  await tx.run(
    sql`INSERT INTO ledger_entries (id, tenant_id, seq, kind, amount_micros, balance_after_micros, occurred_at, charge_day, charge_hour, detail, calculation_id, payment_ref, topup_id, created_at) VALUES (${row.id}, ${row.tenantId}, ${row.seq}, ${row.kind}, ${row.amountMicros}, ${row.balanceAfterMicros}, ${row.occurredAt}, ${row.chargeDay}, ${row.chargeHour}, ${row.detail}, ${row.calculationId}, ${row.paymentRef}, ${row.topupId}, ${row.createdAt})`,
  )
  await tx.run(
    sql`INSERT INTO balances (tenant_id, balance_micros, last_seq, updated_at) VALUES (${row.tenantId}, ${row.balanceAfterMicros}, ${row.seq}, ${row.createdAt}) ON CONFLICT (tenant_id) DO UPDATE SET balance_micros = excluded.balance_micros, last_seq = excluded.last_seq, updated_at = excluded.updated_at`,
  )
}

export async function balanceOf(db: DbOrTx, tenantId: string): Promise<number> {
  return (await db.select().from(balances).where(eq(balances.tenantId, tenantId)).get())?.balanceMicros ?? 0
}

/** True when this provider payment (`provider:payment id`) was credited already. */
export async function paymentCredited(db: DbOrTx, paymentRef: string): Promise<boolean> {
  return (await db.select({ id: ledgerEntries.id }).from(ledgerEntries).where(eq(ledgerEntries.paymentRef, paymentRef)).get()) !== undefined
}

export type LedgerFilter = { kind?: LedgerRow['kind']; fromUs?: number; toUs?: number }
export type LedgerPosition = { occurredAt: number; id: string }

/** Newest first by occurred_at (then id), half-open [from, to). */
export async function listLedger(db: DbOrTx, tenantId: string, f: LedgerFilter, before: LedgerPosition | undefined, limit: number): Promise<LedgerRow[]> {
  const where: SQL[] = [eq(ledgerEntries.tenantId, tenantId)]
  if (f.kind) where.push(eq(ledgerEntries.kind, f.kind))
  if (f.fromUs !== undefined) where.push(gte(ledgerEntries.occurredAt, f.fromUs))
  if (f.toUs !== undefined) where.push(lt(ledgerEntries.occurredAt, f.toUs))
  if (before)
    where.push(or(lt(ledgerEntries.occurredAt, before.occurredAt), and(eq(ledgerEntries.occurredAt, before.occurredAt), lt(ledgerEntries.id, before.id)))!)
  return await db
    .select()
    .from(ledgerEntries)
    .where(and(...where))
    .orderBy(desc(ledgerEntries.occurredAt), desc(ledgerEntries.id))
    .limit(limit)
    .all()
}

/** Spend in [from, to): minus the sum of the non-topup rows (charges and adjustments). */
export async function spendBetween(db: DbOrTx, tenantId: string, fromUs: number, toUs: number): Promise<number> {
  const r = await db
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
export async function chargeDayRows(db: DbOrTx, tenantId: string, beforeDay: string | undefined, limit: number) {
  const where = [eq(ledgerEntries.tenantId, tenantId), eq(ledgerEntries.kind, 'charge')]
  if (beforeDay) where.push(lt(ledgerEntries.chargeDay, beforeDay))
  return await db
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

export async function chargeCalculationsBetween(db: DbOrTx, tenantId: string, fromUs: number, toUs: number): Promise<ChargeCalculationRow[]> {
  return await db
    .select()
    .from(chargeCalculations)
    .where(and(eq(chargeCalculations.tenantId, tenantId), gte(chargeCalculations.chargeHour, fromUs), lt(chargeCalculations.chargeHour, toUs)))
    .all()
}

/** Runs once per tenant per hour inside a charge batch: a hand-written statement (the same text every time), in the caller's transaction. */
export async function insertChargeCalculation(tx: DbOrTx, row: ChargeCalculationRow): Promise<void> {
  await tx.run(
    sql`INSERT INTO charge_calculations (id, tenant_id, charge_hour, plan_code, price_micros_per_server_month, days_in_month, servers, server_ids, amount_micros, created_at) VALUES (${row.id}, ${row.tenantId}, ${row.chargeHour}, ${row.planCode}, ${row.priceMicrosPerServerMonth}, ${row.daysInMonth}, ${row.servers}, ${JSON.stringify(row.serverIds)}, ${row.amountMicros}, ${row.createdAt})`,
  )
}

/**
 * Copies committed WAL pages into the database file: a PASSIVE checkpoint, which waits for no reader
 * or writer. SQLite only (PostgreSQL has no WAL file of ours to copy): nothing there. It goes through
 * the executor rather than straight to the connection, so it runs when no other request's
 * transaction is open on it (a checkpoint inside an open transaction fails with SQLITE_LOCKED).
 */
export async function checkpointWal(deps: Deps): Promise<void> {
  if (!deps.database.sqlite) return
  await deps.db.run(sql`PRAGMA wal_checkpoint(PASSIVE)`)
}

/** True when the tenant's charge for hour `h` is booked already (by this run, an earlier one or another process). */
export async function chargedFor(db: DbOrTx, tenantId: string, h: number): Promise<boolean> {
  // The partial unique index ledger_one_charge_per_hour answers this with one lookup.
  const r = await db.get<{ one: number } | undefined>(
    sql`SELECT 1 AS one FROM ledger_entries WHERE tenant_id = ${tenantId} AND charge_hour = ${h} AND kind = 'charge'`,
  )
  return r !== undefined
}

/** billing.charge's watermark: every hour before it is booked for every tenant. */
export async function chargedUntil(db: DbOrTx, key: string): Promise<number | undefined> {
  return (await db.select().from(billingState).where(eq(billingState.key, key)).get())?.chargedUntil
}

export async function setChargedUntil(tx: DbOrTx, key: string, until: number, now: number): Promise<void> {
  await tx
    .insert(billingState)
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

export async function markHourOwed(tx: DbOrTx, tenantId: string, hourUs: number, now: number): Promise<void> {
  await setChargedUntil(tx, owedKey(tenantId, hourUs), hourUs, now)
}

export async function clearHourOwed(tx: DbOrTx, tenantId: string, hourUs: number): Promise<void> {
  await tx
    .delete(billingState)
    .where(eq(billingState.key, owedKey(tenantId, hourUs)))
    .run()
}

/** Every owed tenant-hour, oldest hour first (then tenant id). */
export async function owedHours(db: DbOrTx): Promise<{ tenantId: string; hourUs: number }[]> {
  const rows = await db
    .select()
    .from(billingState)
    // LIKE, not a range: a range on text follows the collation, which on PostgreSQL may weigh punctuation differently.
    .where(like(billingState.key, `${OWED}%`))
    .all()
  return rows
    .map((r) => ({ tenantId: r.key.slice(OWED.length, r.key.lastIndexOf(':')), hourUs: r.chargedUntil }))
    .sort((a, b) => a.hourUs - b.hourUs || (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : 0))
}

/** Server-hours the tenant was charged for in [fromUs, toUs): the billable managed servers of each charged hour, summed. */
export async function billableServerHours(db: DbOrTx, tenantId: string, fromUs: number, toUs: number): Promise<number> {
  return (await chargeCalculationsBetween(db, tenantId, fromUs, toUs)).reduce((n, c) => n + c.servers, 0)
}

/** What the tenant was charged per server and UTC day in [fromUs, toUs), micro-dollars (each hour split as the per-server CSV splits it). */
export async function chargesPerServerDay(db: DbOrTx, tenantId: string, fromUs: number, toUs: number): Promise<Map<string, Map<string, number>>> {
  const out = new Map<string, Map<string, number>>()
  for (const c of await chargeCalculationsBetween(db, tenantId, fromUs, toUs)) {
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
export async function entriesForReport(db: DbOrTx, tenantId: string, fromUs: number, toUs: number): Promise<ReportEntry[]> {
  const rows = await db
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
  return rows.map((r) => ({
    kind: r.kind,
    amountMicros: r.amountMicros,
    occurredAt: r.occurredAt,
    servers: r.kind === 'charge' && r.serverIds ? splitCharge(r.amountMicros, r.serverIds) : [],
  }))
}
