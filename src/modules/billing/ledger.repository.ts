import { and, desc, eq, getTableColumns, gte, like, lt, or, sql, type SQL } from 'drizzle-orm'
import { balances, billingState, chargeCalculations, ledgerEntries } from '../../../db/schema/billing'
import { isPostgres, rawSql, type DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { splitCharge } from './split'

export type LedgerRow = typeof ledgerEntries.$inferSelect
export type ChargeCalculationRow = typeof chargeCalculations.$inferSelect

/**
 * appendEntry's statements (a top-up, an adjustment; charges go in batches, writeEntries below),
 * hand-written. Built with the `sql` tag, so each database gets its own placeholders; the text is
 * the same on every call, so the SQLite executor prepares each once (db/sqlite-executor.ts). They run on the
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

/**
 * The tenant's calculations of the hours in [fromUs, toUs), in no particular order. Found through
 * the tenant's charges in the ledger (ledger_tenant_occurred: a charge's occurred_at is its
 * charge_hour) and then each calculation by id: charge_calculations has no index led by the tenant,
 * so that an hourly run appends its keys instead of touching a page per tenant (docs/billing.md
 * "What a charge writes").
 */
export async function chargeCalculationsBetween(db: DbOrTx, tenantId: string, fromUs: number, toUs: number): Promise<ChargeCalculationRow[]> {
  return await db
    .select(getTableColumns(chargeCalculations))
    .from(ledgerEntries)
    .innerJoin(chargeCalculations, eq(chargeCalculations.id, ledgerEntries.calculationId))
    .where(
      and(
        eq(ledgerEntries.tenantId, tenantId),
        eq(ledgerEntries.kind, 'charge'),
        gte(ledgerEntries.occurredAt, fromUs),
        lt(ledgerEntries.occurredAt, toUs),
        gte(chargeCalculations.chargeHour, fromUs),
        lt(chargeCalculations.chargeHour, toUs),
      ),
    )
    .all()
}

/** A charge's calculation as a charge batch writes it: the server ids already as the stored JSON text (sorted). */
export type NewChargeCalculation = Omit<ChargeCalculationRow, 'serverIds'> & { serverIdsJson: string }

/** A tenant list as one statement parameter: a JSON array, unpacked by the database (the statement is the same whatever their number). */
const tenantList = (db: DbOrTx) => (isPostgres(db) ? 'SELECT jsonb_array_elements_text(CAST(CAST($1 AS text) AS jsonb))' : 'SELECT value FROM json_each($1)')

/** PostgreSQL: rows of one batch statement at most (one JSON document each). */
const PG_BATCH_ROWS = 2000

/** Runs `write` for each slice of `rows` of at most PG_BATCH_ROWS. */
async function inSlices<T>(rows: T[], write: (slice: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += PG_BATCH_ROWS) await write(rows.slice(i, i + PG_BATCH_ROWS))
}

/**
 * A charge batch's calculations, in the caller's transaction. On SQLite one prepared statement run
 * per row (multi-row statements measured no faster there); on PostgreSQL, where each statement is
 * a round trip, one statement per PG_BATCH_ROWS rows over a JSON document (passed as text: the
 * driver would encode a parameter it knows to be jsonb a second time).
 */
export async function insertChargeCalculations(tx: DbOrTx, rows: NewChargeCalculation[]): Promise<void> {
  if (rows.length === 0) return
  if (isPostgres(tx)) {
    await inSlices(rows, (slice) =>
      rawSql(tx).run(
        `INSERT INTO charge_calculations (id, tenant_id, charge_hour, plan_code, price_micros_per_server_month, days_in_month, servers, server_ids, amount_micros, created_at)
         SELECT x.id, x.t, x.h, x.p, x.pr, x.d, x.n, x.s, x.a, x.c FROM jsonb_to_recordset(CAST(CAST($1 AS text) AS jsonb))
           AS x(id text, t text, h bigint, p text, pr bigint, d bigint, n bigint, s text, a bigint, c bigint)`,
        JSON.stringify(
          slice.map((r) => ({
            id: r.id,
            t: r.tenantId,
            h: r.chargeHour,
            p: r.planCode,
            pr: r.priceMicrosPerServerMonth,
            d: r.daysInMonth,
            n: r.servers,
            s: r.serverIdsJson,
            a: r.amountMicros,
            c: r.createdAt,
          })),
        ),
      ),
    )
    return
  }
  await rawSql(tx).runEach(
    'INSERT INTO charge_calculations (id, tenant_id, charge_hour, plan_code, price_micros_per_server_month, days_in_month, servers, server_ids, amount_micros, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
    rows.map((r) => [
      r.id,
      r.tenantId,
      r.chargeHour,
      r.planCode,
      r.priceMicrosPerServerMonth,
      r.daysInMonth,
      r.servers,
      r.serverIdsJson,
      r.amountMicros,
      r.createdAt,
    ]),
  )
}

/** The running balance and last sequence number of each of these tenants (a tenant with no entry is absent), in one read. */
export async function balancesOf(tx: DbOrTx, tenantIds: string[]): Promise<Map<string, { balance: number; seq: number }>> {
  const rows = await rawSql(tx).values<[string, number | string, number | string]>(
    `SELECT tenant_id, balance_micros, last_seq FROM balances WHERE tenant_id IN (${tenantList(tx)})`,
    JSON.stringify(tenantIds),
  )
  return new Map(rows.map(([tenantId, balance, seq]) => [tenantId, { balance: Number(balance), seq: Number(seq) }]))
}

/**
 * Writes entries and the balances they leave, in the caller's transaction: at most one entry per
 * tenant (each row's balance is its tenant's last). SQLite: prepared statements run per row;
 * PostgreSQL: one statement per table and PG_BATCH_ROWS rows.
 */
export async function writeEntries(tx: DbOrTx, rows: LedgerRow[]): Promise<void> {
  if (rows.length === 0) return
  if (isPostgres(tx)) {
    await inSlices(rows, async (slice) => {
      const doc = JSON.stringify(
        slice.map((r) => ({
          id: r.id,
          t: r.tenantId,
          q: r.seq,
          k: r.kind,
          a: r.amountMicros,
          b: r.balanceAfterMicros,
          o: r.occurredAt,
          cd: r.chargeDay,
          ch: r.chargeHour,
          d: r.detail,
          ci: r.calculationId,
          pr: r.paymentRef,
          ti: r.topupId,
          c: r.createdAt,
        })),
      )
      await rawSql(tx).run(
        `INSERT INTO ledger_entries (id, tenant_id, seq, kind, amount_micros, balance_after_micros, occurred_at, charge_day, charge_hour, detail, calculation_id, payment_ref, topup_id, created_at)
         SELECT x.id, x.t, x.q, x.k, x.a, x.b, x.o, x.cd, x.ch, x.d, x.ci, x.pr, x.ti, x.c FROM jsonb_to_recordset(CAST(CAST($1 AS text) AS jsonb))
           AS x(id text, t text, q bigint, k text, a bigint, b bigint, o bigint, cd text, ch bigint, d text, ci text, pr text, ti text, c bigint)`,
        doc,
      )
      await rawSql(tx).run(
        `INSERT INTO balances (tenant_id, balance_micros, last_seq, updated_at)
         SELECT x.t, x.b, x.q, x.c FROM jsonb_to_recordset(CAST(CAST($1 AS text) AS jsonb)) AS x(t text, b bigint, q bigint, c bigint)
         ON CONFLICT (tenant_id) DO UPDATE SET balance_micros = excluded.balance_micros, last_seq = excluded.last_seq, updated_at = excluded.updated_at`,
        doc,
      )
    })
    return
  }
  const raw = rawSql(tx)
  await raw.runEach(
    'INSERT INTO ledger_entries (id, tenant_id, seq, kind, amount_micros, balance_after_micros, occurred_at, charge_day, charge_hour, detail, calculation_id, payment_ref, topup_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)',
    rows.map((r) => [
      r.id,
      r.tenantId,
      r.seq,
      r.kind,
      r.amountMicros,
      r.balanceAfterMicros,
      r.occurredAt,
      r.chargeDay,
      r.chargeHour,
      r.detail,
      r.calculationId,
      r.paymentRef,
      r.topupId,
      r.createdAt,
    ]),
  )
  await raw.runEach(
    'INSERT INTO balances (tenant_id, balance_micros, last_seq, updated_at) VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id) DO UPDATE SET balance_micros = excluded.balance_micros, last_seq = excluded.last_seq, updated_at = excluded.updated_at',
    rows.map((r) => [r.tenantId, r.balanceAfterMicros, r.seq, r.createdAt]),
  )
}

/**
 * Copies committed WAL pages into the database file: a PASSIVE checkpoint, which waits for no reader
 * or writer; answers how many pages the WAL held. SQLite only (PostgreSQL has no WAL file of ours to
 * copy): nothing there, null. It goes through the executor rather than straight to the connection,
 * so it runs when no other request's transaction is open on it (a checkpoint inside an open
 * transaction fails with SQLITE_LOCKED).
 */
export async function checkpointWal(deps: Deps): Promise<number | null> {
  if (!deps.database.sqlite) return null
  const [row] = await rawSql(deps.db).values<[number, number, number]>('PRAGMA wal_checkpoint(PASSIVE)')
  return Number(row?.[1] ?? 0)
}

/**
 * Which of these tenants have their charge for hour `h` booked already (by this run, an earlier one
 * or another process): one read for a whole batch, one lookup each in the partial unique index
 * ledger_one_charge_per_hour (charge_hour, tenant_id).
 */
export async function chargedAmong(db: DbOrTx, tenantIds: string[], h: number): Promise<Set<string>> {
  if (tenantIds.length === 0) return new Set()
  const rows = await rawSql(db).values<[string]>(
    `SELECT tenant_id FROM ledger_entries WHERE tenant_id IN (${tenantList(db)}) AND charge_hour = $2 AND kind = 'charge'`,
    JSON.stringify(tenantIds),
    h,
  )
  return new Set(rows.map((r) => r[0]))
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
