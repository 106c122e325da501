import { isDatabaseBusy, withTransaction, type DbOrTx, type Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { TenantWalk } from '../../platform/jobs'
import { divideRounded, formatMoney } from '../../platform/money'
import { daysInMonth, formatTimestamp, US_PER_HOUR, utcDay } from '../../platform/time'
import { plansDuringHour, type PricedPlan } from '../plans'
import { appendEntry, freezeOverdue } from './ledger'
import { chargedFor, chargedUntil, checkpointWal, clearHourOwed, insertChargeCalculation, markHourOwed, owedHours, setChargedUntil } from './ledger.repository'
import { firstServerEnrolledAt, serversManagedDuring, tenantServersManagedDuring } from '../fleet'

/**
 * Hourly charges (docs/billing.md): each managed server costs the plan's monthly price ÷ days of the
 * UTC month ÷ 24 for every hour it is managed. A server counts for an hour when it was enrolled
 * before the hour ended and not decommissioned before it began.
 *
 * `billing.charge` books hour H once it is 1 h 15 min old (created_at ≈ H + 1h15m; occurred_at and
 * charge_hour = H). An hour is booked in short slices: tenants in id order, each batch its own
 * transaction, cut at BATCH_TENANTS tenants or once it has run BATCH_BUDGET_MS, and the event loop
 * yields between batches, so a request never waits long for the write lock. A batch's progress is
 * its own ledger rows, durable with it: a crash mid-hour leaves whole tenants behind, and the next
 * run skips every tenant already charged for the hour (one lookup in the partial unique index
 * (tenant, charge_hour), which also makes a second booking impossible whatever reruns, overlapping
 * processes or catch-ups after downtime do). The watermark moves past H only once every tenant of H
 * is booked or recorded owed.
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
 * wait at most: about 900 tenants on the two-core test machine (bench/charges.ts measures it).
 */
const BATCH_BUDGET_MS = 20
/** Servers per slice of the read of an hour's managed servers (a few ms each, outside any transaction). */
const READ_SLICE = 20_000

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
  /** The run's per-tenant error boundary (the job runner's); a run of its own without backoff memory otherwise. */
  tenants?: TenantWalk
}

/** The run's batch size, what it may still run (maxBatches), and what it ran and booked. */
type Batches = { size: number; left: number; count: number; charges: number; budgetMs: number; owed: number }

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
  }
  let hours = 0
  const max = options.maxHours ?? 24 * 400
  let stopped = false
  while (hour <= lastBookable && hours < max) {
    const h = hour
    const ended = await chargeHour(deps, h, batch, timed, walk)
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
        const serverIds = await tenantServersManagedDuring(tx, tenantId, hourUs, hourUs + US_PER_HOUR)
        const plan = (await plansDuringHour(tx, hourUs)).get(tenantId)
        const charged = serverIds.length > 0 && (await chargeTenant(tx, deps, plan, tenantId, serverIds, hourUs, utcDay(hourUs), daysOfHour(hourUs)))
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
async function chargeHour(deps: Deps, h: number, batch: Batches, timed: Timed, walk: TenantWalk): Promise<'done' | 'overtaken' | 'stopped'> {
  const end = h + US_PER_HOUR
  const day = utcDay(h)
  // The plan and price in force during this hour, not the ones of today (plan history). Which
  // servers an hour bills and its plans are settled once the hour is over, so they are read outside
  // the batches' transactions.
  const tenantPlans = await plansDuringHour(deps.db, h)
  const days = daysOfHour(h)
  const byTenant = new Map<string, string[]>()
  for (let after: string | null = ''; after !== null; ) {
    const chunk = await serversManagedDuring(deps.db, h, end, after, READ_SLICE)
    for (const [tenantId, serverId] of chunk.rows) {
      const list = byTenant.get(tenantId)
      if (list) list.push(serverId)
      else byTenant.set(tenantId, [serverId])
    }
    after = chunk.last
    await yieldToEventLoop()
  }
  // Tenants in id order, so a crash-and-resume or another process walks them the same way.
  const tenants = [...byTenant.keys()].sort()
  /** One batch from tenant `from`, in the caller's transaction; null when the hour was finished meanwhile. */
  const bookBatch = async (tx: Tx, from: number, careful: boolean) => {
    // Another run may have finished this hour meanwhile: the watermark only ever moves forward.
    const current = await chargedUntil(tx, WATERMARK)
    if (current !== undefined && current > h) return null
    const deadline = performance.now() + batch.budgetMs
    let i = from
    let n = 0
    let owed = 0
    let deferred = 0
    // Tenants booked already (by a run that stopped mid-hour, or another process) cost one
    // lookup each and do not count: a resumed run's first batch books the next tenants.
    while (i < tenants.length && n < batch.size) {
      const tenantId = tenants[i++]!
      const plan = tenantPlans.get(tenantId)
      if (!isPriced(plan) || (await chargedFor(tx, tenantId, h))) continue
      const servers = byTenant.get(tenantId)!
      let wrote: boolean | undefined
      if (walk.isWaiting(tenantId)) {
        // Waiting out a backoff after failing: not tried, owed.
        wrote = undefined
        deferred++
      } else if (!careful) {
        wrote = await bookCharge(tx, deps, plan, tenantId, servers, h, day, days)
      } else {
        // Its own savepoint and error boundary: a tenant whose booking throws is rolled back alone
        // and recorded owed, and the batch goes on.
        wrote = await walk.run(tenantId, async () => {
          try {
            return await withTransaction(tx, (one) => bookCharge(one, deps, plan, tenantId, servers, h, day, days))
          } catch (e) {
            // Another process booked this tenant's hour after our lookup (PostgreSQL, no lease): its charge stands, nothing is owed.
            if (chargedMeanwhile(e)) return false
            throw e
          }
        })
      }
      if (wrote === undefined) {
        await markHourOwed(tx, tenantId, h, deps.clock.nowUs())
        owed++
      } else if (wrote) n++
      if (performance.now() > deadline) break
    }
    return { i, n, owed, deferred }
  }
  let next = 0
  while (next < tenants.length) {
    if (batch.left <= 0) return 'stopped'
    const from = next
    // Optimistic first: the batch books its tenants without savepoints, so the common case costs
    // nothing more than it did. A batch in which some tenant's booking throws is rolled back whole
    // and booked again carefully: each tenant in its own savepoint and the per-tenant boundary.
    let done: { i: number; n: number; owed: number; deferred: number } | null
    try {
      done = await timed((tx) => bookBatch(tx, from, false))
    } catch (e) {
      if (isDatabaseBusy(e)) throw e
      done = await timed((tx) => bookBatch(tx, from, true))
    }
    batch.left--
    batch.count++
    if (done === null) return 'overtaken'
    next = done.i
    batch.charges += done.n
    batch.owed += done.owed
    walk.deferred += done.deferred
    await yieldToEventLoop()
    // SQLite would otherwise copy the WAL back into the database inside some batch's COMMIT (every
    // 1000 pages), making that one block the event loop twice as long; between batches it is a
    // separate, shorter step (no lock: a passive checkpoint waits for no reader or writer).
    await checkpointWal(deps)
    await yieldToEventLoop()
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
    if (e instanceof Error && /UNIQUE constraint failed: (charge_calculations|ledger_entries)\.tenant_id, \1\.charge_hour\b/.test(e.message)) return true
  return false
}

/** False for a tenant without a plan, on a free plan or a contract-priced one: nothing is booked here. */
function isPriced(plan: PricedPlan | undefined): plan is PricedPlan & { price: number; planCode: string } {
  return !!plan && plan.price !== null && plan.price !== 0
}

/** Books one tenant's hour unless it is free, contract-priced or booked already; true when it wrote a charge. */
async function chargeTenant(
  tx: Tx,
  deps: Deps,
  plan: PricedPlan | undefined,
  tenantId: string,
  serverIds: string[],
  h: number,
  day: string,
  days: number,
): Promise<boolean> {
  if (!isPriced(plan) || (await chargedFor(tx, tenantId, h))) return false
  return await bookCharge(tx, deps, plan, tenantId, serverIds, h, day, days)
}

/** Writes one tenant's charge for hour `h` (its calculation and its ledger row); true. */
async function bookCharge(
  tx: Tx,
  deps: Deps,
  plan: PricedPlan & { price: number; planCode: string },
  tenantId: string,
  serverIds: string[],
  h: number,
  day: string,
  days: number,
): Promise<true> {
  serverIds.sort()
  const amount = hourlyAmount(plan.price, serverIds.length, days)
  const calculationId = deps.newId()
  await insertChargeCalculation(tx, {
    id: calculationId,
    tenantId,
    chargeHour: h,
    planCode: plan.planCode,
    priceMicrosPerServerMonth: plan.price,
    daysInMonth: days,
    servers: serverIds.length,
    serverIds,
    amountMicros: amount,
    createdAt: deps.clock.nowUs(),
  })
  const entry = await appendEntry(tx, deps, {
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
    await deps.events.emit('tenant.balance_low', { tx, tenantId, daysLeft, balanceMicros: entry.balanceAfterMicros })
  return true
}
