import { isDatabaseBusy, withTransaction, type DbOrTx, type Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { TenantWalk } from '../../platform/jobs'
import { divideRounded, formatMoney } from '../../platform/money'
import { daysInMonth, formatTimestamp, US_PER_HOUR, utcDay } from '../../platform/time'
import { plansDuringHour, type PricedPlan } from '../plans'
import { appendEntries, freezeOverdue } from './ledger'
import {
  chargedAmong,
  chargedUntil,
  checkpointWal,
  clearHourOwed,
  insertChargeCalculations,
  markHourOwed,
  owedHours,
  setChargedUntil,
} from './ledger.repository'
import { firstServerEnrolledAt, managedServersByTenant, tenantServersManagedDuring } from '../fleet'

/**
 * Hourly charges (docs/billing.md): each managed server costs the plan's monthly price ÷ days of the
 * UTC month ÷ 24 for every hour it is managed. A server counts for an hour when it was enrolled
 * before the hour ended and not decommissioned before it began.
 *
 * `billing.charge` books hour H once it is 1 h 15 min old (created_at ≈ H + 1h15m; occurred_at and
 * charge_hour = H). An hour is booked in short slices: tenants in id order, each batch its own
 * transaction, cut at BATCH_TENANTS tenants, at the tenants whose writes fit in CHECKPOINT_PAGES
 * WAL pages, or once it has run BATCH_BUDGET_MS, and the event loop yields between batches, so a request never waits long for the write lock. Within a batch the
 * work goes a slice of SLICE_TENANTS tenants at a time: which of them are charged already is one
 * read, their balances another, and their calculations, ledger rows and balances are written
 * together (ledger.ts appendEntries). A batch's progress is its own ledger rows, durable with it: a
 * crash mid-hour leaves whole tenants behind, and the next run skips every tenant already charged
 * for the hour (the partial unique index (charge_hour, tenant) answers the batch's read, and makes a
 * second booking impossible whatever reruns, overlapping processes or catch-ups after downtime
 * do). The watermark moves past H only once every tenant of H is booked or recorded owed.
 *
 * One tenant's failure stays that tenant's (docs/billing.md "A tenant whose charge fails"): a batch
 * whose plain transaction fails is booked again with each tenant in its own savepoint and in the
 * job's per-tenant error boundary (TenantWalk). A tenant whose booking throws (or that waits out a backoff after failing)
 * is recorded owed for the hour in the batch's own transaction (`billing_state` key
 * `owed:<tenant>:<hour>`), so the other tenants' charges commit and the watermark moves on; every
 * later run first books the owed hours, oldest first, each in one transaction that also deletes the
 * owed row, until the tenant's part succeeds.
 */
const BOOKING_LAG_US = 75 * 60 * 1_000_000
const WATERMARK = 'charges'
/** Most tenants one batch transaction books (and one page of the read before it). */
const BATCH_TENANTS = 1000
/**
 * A batch stops taking tenants once it has run this long, leaving room for its commit (an fsync
 * under synchronous=FULL, none under the group commit) below the 50 ms a concurrent request may
 * wait at most. On the two-core test machine a batch of BATCH_TENANTS takes about 11 to 16 ms, so
 * this cuts one only on a busy moment (bench/charges.ts measures it). It is looked at after each
 * slice of SLICE_TENANTS.
 */
const BATCH_BUDGET_MS = 20
/** Tenants per page of the read of an hour's managed servers (a few ms each, outside any transaction). */
const READ_PAGE_TENANTS = 2000
/** Tenants one read of a batch checks for a charge already booked (and the batch's budget is looked at after each slice). */
const SLICE_TENANTS = 250
/** The WAL size (pages) the run checkpoints before reaching: 80 % of SQLite's automatic checkpoint at 1000 pages. */
const CHECKPOINT_PAGES = 800

const hourStart = (us: number) => Math.floor(us / US_PER_HOUR) * US_PER_HOUR

/** Micro-USD for `servers` servers during one hour of a month with `days` days. */
function hourlyAmount(priceMicrosPerServerMonth: number, servers: number, days: number): number {
  return divideRounded(priceMicrosPerServerMonth * servers, days * 24)
}

/** Below this many days of balance at the current rate, the owner is warned (notifications, `balance`; alerts, `low_balance`). */
export const LOW_BALANCE_DAYS = 3

type ChargeRunOptions = {
  /** Hours one run books at most (catch-up after downtime). */
  maxHours?: number
  /** Tenants one batch books at most (BATCH_TENANTS). */
  batchTenants?: number
  /** Ends the run after this many batch transactions, as a crash between two batches would. */
  maxBatches?: number
  /** How long one batch may run before it is cut (BATCH_BUDGET_MS): tests that count batches lift it, so no speed decides. */
  batchBudgetMs?: number
  /** Told how long each write transaction of the run held the write lock, in ms. */
  onTransaction?: (ms: number) => void
  /** Told the WAL pages each of the run's checkpoints found (SQLite: every page the batches before it wrote). */
  onCheckpoint?: (pages: number) => void
  /** The run's per-tenant error boundary (the job runner's); a run of its own without backoff memory otherwise. */
  tenants?: TenantWalk
}

/**
 * The run's batch size, what it may still run (maxBatches), and what it ran and booked; and the WAL
 * pages a booked tenant wrote, as the last checkpoint found (0 until one did).
 */
type Batches = { size: number; left: number; count: number; charges: number; budgetMs: number; owed: number; pagesPerTenant: number }

/** The WAL pages a booked tenant wrote at the last checkpoint of a run on this database: the next run's first batch is sized by it. */
const pagesPerTenant = new WeakMap<DbOrTx, number>()

/** Lets requests and other work run between two batches. */
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

/** Runs `fn` in a write transaction of its own, telling options.onTransaction how long it held the write lock. */
type Timed = <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>

export async function runHourlyCharges(deps: Deps, options: ChargeRunOptions = {}): Promise<string> {
  const timed: Timed = async (fn) => {
    // From the moment the transaction has the write lock (its callback starts: on SQLite after any
    // wait for another request's transaction to end) to its commit or rollback; from the call when
    // it never got the lock.
    const called = performance.now()
    let locked = Number.NaN
    try {
      return await withTransaction(deps.db, (tx) => {
        locked = performance.now()
        return fn(tx)
      })
    } finally {
      options.onTransaction?.(performance.now() - (Number.isNaN(locked) ? called : locked))
    }
  }
  const now = deps.clock.nowUs()
  const lastBookable = hourStart(now - BOOKING_LAG_US) // the latest hour H with H + 1h15m <= now
  let hour = (await chargedUntil(deps.db, WATERMARK)) ?? (await firstHour(deps.db))
  const walk = options.tenants ?? new TenantWalk(deps, 'billing.charge')
  if (hour === null) {
    await timed((tx) => freezeOverdue(tx, deps, walk))
    return 'no servers yet; nothing to charge'
  }
  // Hours left owed by earlier runs come first (oldest first), so a tenant's hours are booked in order where they can be.
  const retried = await chargeOwedHours(deps, walk, timed)
  const batch: Batches = {
    size: options.batchTenants ?? BATCH_TENANTS,
    left: options.maxBatches ?? Number.POSITIVE_INFINITY,
    count: 0,
    charges: 0,
    budgetMs: options.batchBudgetMs ?? BATCH_BUDGET_MS,
    owed: 0,
    pagesPerTenant: pagesPerTenant.get(deps.db) ?? 0,
  }
  let hours = 0
  const max = options.maxHours ?? 24 * 400
  let stopped = false
  while (hour <= lastBookable && hours < max) {
    const h = hour
    const ended = await chargeHour(deps, h, batch, timed, walk, options.onCheckpoint)
    if (ended === 'overtaken') break
    if (ended === 'stopped') {
      stopped = true
      break
    }
    // The hour is booked for every tenant: the watermark moves past it (only ever forward).
    const moved = await timed(async (tx) => {
      const current = await chargedUntil(tx, WATERMARK)
      if (current !== undefined && current > h) return false
      await setChargedUntil(tx, WATERMARK, h + US_PER_HOUR, deps.clock.nowUs())
      return true
    })
    if (!moved) break
    hour += US_PER_HOUR
    hours++
  }
  const owed = retried.tried || batch.owed ? `; owed hours: ${retried.booked} of ${retried.tried} booked, ${batch.owed} newly owed` : ''
  if (stopped) return `stopped after ${batch.count} batches (${batch.charges} charges), ${formatTimestamp(hour)} not finished${owed}`
  const frozen = await timed((tx) => freezeOverdue(tx, deps, walk))
  return `booked ${hours} hours (${batch.charges} charges) up to ${formatTimestamp(hour)}; ${frozen} accounts frozen; ${batch.count} batches${owed}`
}

const daysOfHour = (h: number) => {
  const date = new Date(h / 1000)
  return daysInMonth(date.getUTCFullYear(), date.getUTCMonth() + 1)
}

/**
 * Books the tenant-hours earlier runs left owed, oldest first, each in its own transaction that
 * deletes the owed row with the charge it writes (or without one: a tenant whose hour turns out
 * free, or that another process charged meanwhile, owes nothing). The plan and servers of an hour
 * are settled once it is over, so booking it late gives the same charge. A tenant still waiting out
 * its backoff is not tried (nothing read); one whose part fails again stays owed.
 */
async function chargeOwedHours(deps: Deps, walk: TenantWalk, timed: Timed): Promise<{ tried: number; booked: number }> {
  let tried = 0
  let booked = 0
  for (const { tenantId, hourUs } of await owedHours(deps.db)) {
    tried++
    const wrote = await walk.run(tenantId, () =>
      timed(async (tx) => {
        const serverIds = (await tenantServersManagedDuring(tx, tenantId, hourUs, hourUs + US_PER_HOUR)).sort()
        const plan = (await plansDuringHour(tx, hourUs)).get(tenantId)
        const charged =
          serverIds.length > 0 &&
          isPriced(plan) &&
          !(await chargedAmong(tx, [tenantId], hourUs)).has(tenantId) &&
          (await bookCharges(tx, deps, [{ tenantId, plan, servers: serverIds.length, serverIdsJson: JSON.stringify(serverIds) }], hourUs)) > 0
        await clearHourOwed(tx, tenantId, hourUs)
        return charged
      }),
    )
    if (wrote) booked++
    await yieldToEventLoop()
  }
  return { tried, booked }
}

/** Billing starts with the hour of the first server ever enrolled. */
async function firstHour(db: DbOrTx): Promise<number | null> {
  const first = await firstServerEnrolledAt(db)
  return first === null ? null : hourStart(first)
}

/**
 * Books hour `h` for every tenant with managed servers and a priced plan, batch by batch (counting
 * them and their charges in `batch`); answers 'done', or why it ended first: another process moved the watermark past the hour, or
 * the run's batch allowance (maxBatches) ran out.
 */
async function chargeHour(
  deps: Deps,
  h: number,
  batch: Batches,
  timed: Timed,
  walk: TenantWalk,
  onCheckpoint: ChargeRunOptions['onCheckpoint'],
): Promise<'done' | 'overtaken' | 'stopped'> {
  const end = h + US_PER_HOUR
  // The plan and price in force during this hour, not the ones of today (plan history). Which
  // servers an hour bills and its plans are settled once the hour is over, so they are read outside
  // the batches' transactions.
  const tenantPlans = await plansDuringHour(deps.db, h)
  // The hour's servers grouped by tenant by the database, a page of tenants at a time with the
  // event loop yielding between pages; only the priced tenants are kept.
  const tenants: Billed[] = []
  for (let after = ''; ; ) {
    const page = await managedServersByTenant(deps.db, h, end, after, READ_PAGE_TENANTS)
    if (page.length === 0) break
    for (const [tenantId, servers, serverIdsJson] of page) {
      const plan = tenantPlans.get(tenantId)
      if (isPriced(plan)) tenants.push({ tenantId, plan, servers, serverIdsJson })
    }
    after = page[page.length - 1]![0]
    await yieldToEventLoop()
  }
  // Tenants in id order (the database answered in it), so a crash-and-resume or another process walks them the same way.
  if (!tenants.every((t, k) => k === 0 || tenants[k - 1]!.tenantId < t.tenantId)) tenants.sort((x, y) => (x.tenantId < y.tenantId ? -1 : 1))
  /** One batch from tenant `from`, in the caller's transaction; null when the hour was finished meanwhile. */
  const bookBatch = async (tx: Tx, from: number, careful: boolean, size: number) => {
    // Another run may have finished this hour meanwhile: the watermark only ever moves forward.
    const current = await chargedUntil(tx, WATERMARK)
    if (current !== undefined && current > h) return null
    const deadline = performance.now() + batch.budgetMs
    let i = from
    let n = 0
    let owed = 0
    let deferred = 0
    // A slice of tenants at a time: which of them are charged already is one read; those booked
    // already (by a run that stopped mid-hour, or another process) do not count, so a resumed
    // run's first batch books the next tenants.
    while (i < tenants.length && n < size) {
      const slice = tenants.slice(i, i + Math.min(SLICE_TENANTS, size - n))
      i += slice.length
      const charged = await chargedAmong(
        tx,
        slice.map((t) => t.tenantId),
        h,
      )
      const book: Billed[] = []
      for (const t of slice) {
        if (charged.has(t.tenantId)) continue
        let wrote: boolean | undefined
        if (walk.isWaiting(t.tenantId)) {
          // Waiting out a backoff after failing: not tried, owed.
          wrote = undefined
          deferred++
        } else if (!careful) {
          book.push(t)
          continue
        } else {
          // Its own savepoint and error boundary: a tenant whose booking throws is rolled back alone
          // and recorded owed, and the batch goes on.
          wrote = await walk.run(t.tenantId, async () => {
            try {
              return (await withTransaction(tx, (one) => bookCharges(one, deps, [t], h))) > 0
            } catch (e) {
              // Another process booked this tenant's hour after our lookup (PostgreSQL, no lease): its charge stands, nothing is owed.
              if (chargedMeanwhile(e)) return false
              throw e
            }
          })
        }
        if (wrote === undefined) {
          await markHourOwed(tx, t.tenantId, h, deps.clock.nowUs())
          owed++
        } else if (wrote) n++
      }
      // The common case: the slice's charges in a few statements.
      n += await bookCharges(tx, deps, book, h)
      if (performance.now() > deadline) break
    }
    return { i, n, owed, deferred }
  }
  /** Batches since the last checkpoint, the tenants they booked, and the WAL pages one wrote (unknown until the first checkpoint). */
  const wal = { batches: 0, tenants: 0, pagesPerBatch: Number.POSITIVE_INFINITY }
  let next = 0
  while (next < tenants.length) {
    if (batch.left <= 0) return 'stopped'
    const from = next
    // A batch's size in WAL pages as well as tenants: every page it dirties is written into the WAL
    // at its COMMIT, and one that brings the WAL past SQLite's automatic checkpoint (1000 pages)
    // copies the whole WAL back into the database inside that COMMIT, holding the write lock for
    // it. A tenant with a long history writes a page of each index led by the tenant (about three
    // pages in all, against under half a page in the first hours), so the batch takes as many
    // tenants as fit in CHECKPOINT_PAGES at the rate the last checkpoint measured, and never fewer
    // than a slice.
    const size = batch.pagesPerTenant > 0 ? Math.min(batch.size, Math.max(SLICE_TENANTS, Math.floor(CHECKPOINT_PAGES / batch.pagesPerTenant))) : batch.size
    // Optimistic first: the batch books its tenants without savepoints, so the common case costs
    // nothing more than it did. A batch in which some tenant's booking throws is rolled back whole
    // and booked again carefully: each tenant in its own savepoint and the per-tenant boundary.
    let done: { i: number; n: number; owed: number; deferred: number } | null
    try {
      done = await timed((tx) => bookBatch(tx, from, false, size))
    } catch (e) {
      if (isDatabaseBusy(e)) throw e
      done = await timed((tx) => bookBatch(tx, from, true, size))
    }
    batch.left--
    batch.count++
    if (done === null) return 'overtaken'
    next = done.i
    batch.charges += done.n
    batch.owed += done.owed
    walk.deferred += done.deferred
    await yieldToEventLoop()
    // SQLite would otherwise copy the WAL back into the database inside some batch's COMMIT (once
    // the WAL holds 1000 pages), making that one hold the write lock twice as long. Between batches
    // it is a separate step (no lock: a passive checkpoint waits for no reader or writer), taken
    // only when the next batch could bring the WAL to that size: each checkpoint fsyncs the WAL and
    // the database file, so one per batch (about 370 pages each on bench/charges.ts) cost as much
    // as the batches' own writes. What it finds sizes the next batches (above).
    wal.batches++
    wal.tenants += done.n
    if ((wal.batches + 1) * wal.pagesPerBatch > CHECKPOINT_PAGES) {
      const pages = await checkpointWal(deps)
      if (pages !== null) {
        wal.pagesPerBatch = pages / wal.batches
        if (wal.tenants > 0) pagesPerTenant.set(deps.db, (batch.pagesPerTenant = pages / wal.tenants))
        onCheckpoint?.(pages)
      }
      wal.batches = 0
      wal.tenants = 0
      await yieldToEventLoop()
    }
  }
  return 'done'
}

/**
 * True for the unique violation of a tenant's charge for an hour (the ledger's one charge per hour,
 * or its calculation): the charge exists, written by another process that committed it after this
 * batch looked (on PostgreSQL a concurrent insert waits for the other transaction and fails only if
 * it committed). Our savepoint is rolled back; that hour is booked once, by the other.
 */
function chargedMeanwhile(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++)
    if (e instanceof Error && /UNIQUE constraint failed: (charge_calculations|ledger_entries)\.charge_hour, \1\.tenant_id\b/.test(e.message)) return true
  return false
}

/** False for a tenant without a plan, on a free plan or a contract-priced one: nothing is booked here. */
function isPriced(plan: PricedPlan | undefined): plan is PricedPlan & { price: number; planCode: string } {
  return !!plan && plan.price !== null && plan.price !== 0
}

/** A tenant billed for an hour: its plan then, and its servers managed during it (how many, their ids as the stored JSON text, sorted). */
type Billed = { tenantId: string; plan: PricedPlan & { price: number; planCode: string }; servers: number; serverIdsJson: string }

/**
 * Writes these tenants' charges for hour `h` (a calculation and a ledger row each, and the balance),
 * in the caller's transaction, a statement per table for all of them (ledger.ts appendEntries);
 * answers how many it wrote. One that cannot be booked throws for all: the batch is then booked again
 * carefully, a tenant at a time.
 */
async function bookCharges(tx: Tx, deps: Deps, tenants: Billed[], h: number): Promise<number> {
  if (tenants.length === 0) return 0
  const day = utcDay(h)
  const days = daysOfHour(h)
  const now = deps.clock.nowUs()
  const amounts = tenants.map((t) => hourlyAmount(t.plan.price, t.servers, days))
  const prices = new Map<number, string>() // formatMoney once per price, not per tenant
  const calculations = tenants.map((t, k) => ({
    id: deps.newId(),
    tenantId: t.tenantId,
    chargeHour: h,
    planCode: t.plan.planCode,
    priceMicrosPerServerMonth: t.plan.price,
    daysInMonth: days,
    servers: t.servers,
    serverIdsJson: t.serverIdsJson,
    amountMicros: amounts[k]!,
    createdAt: now,
  }))
  await insertChargeCalculations(tx, calculations)
  const entries = await appendEntries(
    tx,
    deps,
    tenants.map((t, k) => ({
      tenantId: t.tenantId,
      kind: 'charge' as const,
      amountMicros: -amounts[k]!,
      occurredAt: h,
      chargeDay: day,
      chargeHour: h,
      calculationId: calculations[k]!.id,
      detail: `${t.servers} server${t.servers === 1 ? '' : 's'} × ${t.plan.planCode} ${priceText(prices, t.plan.price)} USD/month ÷ ${days} days ÷ 24 h`,
    })),
  )
  for (let k = 0; k < tenants.length; k++) {
    // Days of balance left at this hour's rate: a warning while there is still time to top up.
    const amount = amounts[k]!
    const balance = entries[k]!.balanceAfterMicros
    const daysLeft = balance / (amount * 24)
    if (amount > 0 && balance >= 0 && daysLeft < LOW_BALANCE_DAYS)
      await deps.events.emit('tenant.balance_low', { tx, tenantId: tenants[k]!.tenantId, daysLeft, balanceMicros: balance })
  }
  return tenants.length
}

function priceText(known: Map<number, string>, price: number): string {
  let text = known.get(price)
  if (text === undefined) known.set(price, (text = formatMoney(price)))
  return text
}
