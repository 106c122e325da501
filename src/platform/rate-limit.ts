import { eq, lt } from 'drizzle-orm'
import { rateLimits } from '../../db/schema/platform'
import { changesOf, isDatabaseBusy, rawSql, withTransaction, type DbOrTx } from '../../db/client'
import { SAFE_METHODS, type Actor } from './actor'
import type { Clock } from './clock'
import { perDeps, type Deps } from './context'
import { problems } from './problem'

/**
 * Rate limits by GCRA (the generic cell rate algorithm) kept in the database, so every process
 * sharing it counts against the same bucket: `limit` requests per `periodSeconds`, with bursts up to
 * `limit`. Each decision is one BEGIN IMMEDIATE transaction; two processes never both take the last
 * token.
 */
export type RateDecision = { allowed: boolean; retryAfterSeconds: number; remaining: number }

export async function consumeRateLimit(db: DbOrTx, clock: Clock, bucket: string, limit: number, periodSeconds: number): Promise<RateDecision> {
  if (!(limit >= 1) || !(periodSeconds > 0)) throw new RangeError('rate limit needs limit >= 1 and a positive period')
  const periodUs = periodSeconds * 1_000_000
  const intervalUs = periodUs / limit
  return await withTransaction(db, async (tx) => {
    const now = clock.nowUs()
    const row = await tx.select().from(rateLimits).where(eq(rateLimits.bucket, bucket)).get()
    const tat = Math.max(row?.tat ?? now, now)
    const newTat = tat + intervalUs
    if (newTat - now > periodUs) {
      const retryUs = newTat - periodUs - now
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(retryUs / 1_000_000)), remaining: 0 }
    }
    const values = { bucket, tat: Math.round(newTat), expiresAt: Math.round(newTat) }
    await tx
      .insert(rateLimits)
      .values(values)
      .onConflictDoUpdate({ target: rateLimits.bucket, set: { tat: values.tat, expiresAt: values.expiresAt } })
      .run()
    const remaining = Math.floor((periodUs - (newTat - now)) / intervalUs)
    return { allowed: true, retryAfterSeconds: 0, remaining }
  })
}

/** Consumes one request from the bucket or throws 429 rate_limited with Retry-After. */
export async function enforceRateLimit(db: DbOrTx, clock: Clock, bucket: string, limit: number, periodSeconds: number): Promise<void> {
  const decision = await consumeRateLimit(db, clock, bucket, limit, periodSeconds)
  if (!decision.allowed) throw problems.rateLimited(decision.retryAfterSeconds)
}

/** Removes buckets whose state has fully drained; they behave exactly like absent ones. */
export async function collectDrainedBuckets(db: DbOrTx, clock: Clock): Promise<number> {
  const now = clock.nowUs()
  const result = await withTransaction(db, (tx) => tx.delete(rateLimits).where(lt(rateLimits.expiresAt, now)).run())
  return changesOf(result)
}

/**
 * The same GCRA kept in this process's memory, for limits checked on every request, where a
 * BEGIN IMMEDIATE transaction each would cost more than the request. Counts are per process: two
 * processes behind one address each allow the full limit (a shared store comes with scale-out).
 * State is a theoretical arrival time per bucket; a bucket whose time has passed is the same as
 * an absent one, so those are swept away as the map grows.
 */
export type LocalLimit = { bucket: string; limit: number; periodSeconds: number }

export class LocalRateLimiter {
  readonly #tat = new Map<string, number>()
  #sweepAt = 1024

  constructor(private readonly clock: Clock) {}

  /**
   * Takes one request from every bucket, or from none: a request refused by one limit does not
   * use up another. Answers the longest wait among the refusing buckets.
   */
  consume(limits: readonly LocalLimit[]): RateDecision {
    const now = this.clock.nowUs()
    const next: [string, number][] = []
    let retryUs = 0
    let remaining = Number.POSITIVE_INFINITY
    for (const { bucket, limit, periodSeconds } of limits) {
      if (!(limit >= 1) || !(periodSeconds > 0)) throw new RangeError('rate limit needs limit >= 1 and a positive period')
      const periodUs = periodSeconds * 1_000_000
      const intervalUs = periodUs / limit
      const newTat = Math.max(this.#tat.get(bucket) ?? now, now) + intervalUs
      if (newTat - now > periodUs) retryUs = Math.max(retryUs, newTat - periodUs - now)
      else remaining = Math.min(remaining, Math.floor((periodUs - (newTat - now)) / intervalUs))
      next.push([bucket, newTat])
    }
    if (retryUs > 0) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(retryUs / 1_000_000)), remaining: 0 }
    for (const [bucket, tat] of next) this.#tat.set(bucket, tat)
    if (this.#tat.size >= this.#sweepAt) this.#sweep(now)
    return { allowed: true, retryAfterSeconds: 0, remaining: Number.isFinite(remaining) ? remaining : 0 }
  }

  get size(): number {
    return this.#tat.size
  }

  #sweep(now: number): void {
    for (const [bucket, tat] of this.#tat) if (tat <= now) this.#tat.delete(bucket)
    // Sweep again only once the map has doubled past what is still live.
    this.#sweepAt = Math.max(1024, this.#tat.size * 2)
  }
}

/**
 * LocalRateLimiter's decision over buckets kept in the database, for instances sharing one
 * PostgreSQL: all buckets or none, in one statement (the gpuhq_compat.rate_take function of
 * db/migrations-pg/0002), whose commit does not wait for the disk (a count lost to a crash only
 * lets a few more requests through). It runs outside any transaction of the request, so a refused
 * request keeps no idempotency key (docs/conventions.md).
 */
async function consumeShared(
  db: DbOrTx,
  clock: Clock,
  limits: readonly LocalLimit[],
  ride?: { rider: Rider; tenantId: string },
): Promise<RateDecision & { epoch: number | null; rode?: Rode }> {
  const json = JSON.stringify(
    limits.map(({ bucket, limit, periodSeconds }) => ({ bucket, interval_us: (periodSeconds * 1_000_000) / limit, period_us: periodSeconds * 1_000_000 })),
  )
  // With the credentials' change counter (src/platform/auth-epoch.ts), read in the same round trip:
  // what confirms a verification kept in memory (src/platform/access.ts); and the route's rider.
  const raw = rawSql(db)
  const row = ride
    ? (await raw.objects(riderStatement(ride.rider), json, clock.nowUs(), ride.tenantId))[0]!
    : (await raw.objects(COUNT_STATEMENT, json, clock.nowUs()))[0]!
  const epoch = row.epoch === null ? null : Number(row.epoch)
  const retry = Number(row.retry)
  if (retry > 0) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(retry / 1_000_000)), remaining: 0, epoch }
  const rode = ride && { rider: ride.rider, tenantId: ride.tenantId, row: row.rider_found === null ? null : row }
  return { allowed: true, retryAfterSeconds: 0, remaining: 0, epoch, rode }
}

const COUNT_STATEMENT = 'SELECT rate_take($1, $2) AS retry, (SELECT n FROM auth_epoch WHERE id = 1) AS epoch'

/**
 * A read that rides on the rate limit's statement on PostgreSQL: the first read of a route every
 * request makes (GET /servers' fleet snapshot head), sent in the round trip the request pays anyway
 * instead of one of its own; a read by token is then one statement, not two (docs/scale-out.md "One
 * round trip for a read by token"). `select` reads at most one row, with `$3` for the caller's
 * tenant, and names no column `retry`, `epoch` or `rider_found`. The route's handler takes the row
 * with `rodeFor`, and reads for itself when nothing rode: SQLite (no statement to ride on), no limit
 * configured, a refused or busy count, or a caller of another tenant.
 */
export type Rider = { name: string; select: string }

/** What a rider read: its row, or null when its select found none. */
export type Rode = { rider: Rider; tenantId: string; row: Record<string, unknown> | null }

const riderStatements = new WeakMap<Rider, string>()

function riderStatement(rider: Rider): string {
  let text = riderStatements.get(rider)
  if (text === undefined) {
    // LIMIT 1 around the select: rate_take runs once per row of the answer, and there is one.
    text = `${COUNT_STATEMENT}, rider.* FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT 1 AS rider_found, r.* FROM (${rider.select}) AS r LIMIT 1) AS rider ON true`
    riderStatements.set(rider, text)
  }
  return text
}

const riders = new Map<string, Rider>()

/** `rider` rides on the count of every request to `method route` (a route template, e.g. /api/v1/servers). */
export function rideOnCount(method: string, route: string, rider: Rider): void {
  riders.set(`${method} ${route}`, rider)
}

/** The rider of `method route`, if one was declared. */
export function riderOf(method: string, route: string): Rider | undefined {
  return riders.size === 0 ? undefined : riders.get(`${method} ${route}`)
}

const rodes = new WeakMap<Request, Rode>()

/** Keeps what rode on a request's count, for its handler (src/platform/access.ts). */
export function keepRode(request: Request, rode: Rode | undefined): void {
  if (rode) rodes.set(request, rode)
}

/**
 * The row `rider` read for this request and `tenantId` (null: no row), or undefined when nothing
 * rode for them: the caller reads for itself.
 */
export function rodeFor(request: Request, rider: Rider, tenantId: string): Record<string, unknown> | null | undefined {
  const rode = rodes.get(request)
  return rode && rode.rider === rider && rode.tenantId === tenantId ? rode.row : undefined
}

/** This process's limiter for a Deps (tests build several Deps in one process). */
export const requestRateLimiter = perDeps((deps) => new LocalRateLimiter(deps.clock))

/**
 * Who a request counts against as one caller: its bearer token (a PAT or an AI client's OAuth
 * token), else the signed-in member (every session of theirs together, so signing in again does
 * not start a fresh count). Null for the system and agents.
 */
function principalOf(actor: Actor): string | null {
  if (actor.kind === 'system' || actor.kind === 'agent') return null
  if (actor.via === 'bearer' && actor.tokenId) return `token:${actor.tokenId}`
  if (actor.via === 'cookie' && actor.userId) return `user:${actor.userId}`
  return null
}

/** One decision over `limits`: shared by every instance on PostgreSQL, in this process's memory on SQLite. */
async function decide(
  deps: Deps,
  limits: readonly LocalLimit[],
  ride?: { rider: Rider; tenantId: string },
): Promise<RateDecision & { epoch?: number | null; rode?: Rode }> {
  // On PostgreSQL several instances serve one tenant: the count is theirs together (docs/scale-out.md).
  return deps.config.postgresUrl ? await consumeShared(deps.db, deps.clock, limits, ride) : requestRateLimiter(deps).consume(limits)
}

/**
 * `decide`, except that a read meeting a busy database is let through uncounted (null): on
 * PostgreSQL the count is a write (rate_take), and while another process holds the tables' locks
 * reads keep answering (docs/conventions.md); a write waits and answers 503 as every write does.
 */
async function decideUnlessBusyRead(
  deps: Deps,
  limits: readonly LocalLimit[],
  read: boolean,
  ride?: { rider: Rider; tenantId: string },
): Promise<(RateDecision & { epoch?: number | null; rode?: Rode }) | null> {
  try {
    return await decide(deps, limits, ride)
  } catch (e) {
    if (read && isDatabaseBusy(e)) return null
    throw e
  }
}

/**
 * The per-request limits (docs/conventions.md "Rate limits": by tenant and by caller), from RATE_LIMIT_* in
 * config: every request counts against its caller (a bearer token, or the member behind a browser
 * session), and every write (a method other than GET, HEAD, OPTIONS) against the tenant, whoever
 * sends it. Called once per request after the caller is authenticated; throws 429 rate_limited with
 * Retry-After. The system actor (jobs) and agents (their own session limits, agent.ws.ts) are not
 * counted here.
 */
export async function enforceRequestRateLimits(deps: Deps, actor: Actor, method: string, rider?: Rider): Promise<Rode | undefined> {
  const taken = await takeRequestRateLimits(deps, actor, method, rider)
  if (taken.retryAfterSeconds !== null) throw problems.rateLimited(taken.retryAfterSeconds)
  return taken.rode
}

/**
 * enforceRequestRateLimits's decision without the throw: `retryAfterSeconds` when refused (nothing
 * was taken), and on PostgreSQL the credentials' change counter as the same statement read it
 * (null when no statement ran: SQLite, no limit, or a read let through a busy database), and what
 * `rider` read in that statement for the caller's tenant.
 */
export async function takeRequestRateLimits(
  deps: Deps,
  actor: Actor,
  method: string,
  rider?: Rider,
): Promise<{ retryAfterSeconds: number | null; epoch: number | null; rode?: Rode }> {
  const principal = principalOf(actor)
  if (principal === null) return { retryAfterSeconds: null, epoch: null }
  const { tenantWritesPerMinute, tokenRequestsPerMinute, sessionUserRequestsPerMinute } = deps.config.rateLimits
  const limits: LocalLimit[] = []
  const perCaller = actor.via === 'bearer' ? tokenRequestsPerMinute : sessionUserRequestsPerMinute
  if (perCaller > 0) limits.push({ bucket: principal, limit: perCaller, periodSeconds: 60 })
  if (tenantWritesPerMinute > 0 && !SAFE_METHODS.has(method.toUpperCase()))
    limits.push({ bucket: `tenant-writes:${actor.tenantId}`, limit: tenantWritesPerMinute, periodSeconds: 60 })
  if (limits.length === 0) return { retryAfterSeconds: null, epoch: null }
  const ride = rider && actor.tenantId ? { rider, tenantId: actor.tenantId } : undefined
  const decision = await decideUnlessBusyRead(deps, limits, SAFE_METHODS.has(method.toUpperCase()), ride)
  return { retryAfterSeconds: decision && !decision.allowed ? decision.retryAfterSeconds : null, epoch: decision?.epoch ?? null, rode: decision?.rode }
}

/** Expensive reads taken at once before the steady rate applies (a report costs up to a few hundred milliseconds). */
const EXPENSIVE_BURST = { caller: 5, tenant: 10 }

/**
 * A rate of `perMinute` with bursts of at most `burst`: GCRA's burst is its limit, so the same rate
 * is `burst` per (60 × burst ÷ perMinute) seconds.
 */
function burstLimit(bucket: string, perMinute: number, burst: number): LocalLimit {
  const limit = Math.min(perMinute, burst)
  return { bucket, limit, periodSeconds: (60 * limit) / perMinute }
}

/**
 * The limit on expensive reads (docs/conventions.md "Rate limits"): a read that computes its answer
 * from many rows (a report not in the answer cache) counts once against its caller (token or
 * member, as above) and once against the tenant, RATE_LIMIT_EXPENSIVE_READS_PER_MINUTE and
 * RATE_LIMIT_TENANT_EXPENSIVE_READS_PER_MINUTE, in bursts of at most 5 and 10. Call it right before
 * the work, after the cheap answers (cache hits, 304) were given: those cost nothing and count
 * nothing. Throws 429 rate_limited with Retry-After; a refused read used up neither count.
 */
export async function enforceExpensiveReadLimit(deps: Deps, actor: Actor): Promise<void> {
  const principal = principalOf(actor)
  if (principal === null) return
  const { expensiveReadsPerMinute, tenantExpensiveReadsPerMinute } = deps.config.rateLimits
  const limits: LocalLimit[] = []
  if (expensiveReadsPerMinute > 0) limits.push(burstLimit(`expensive:${principal}`, expensiveReadsPerMinute, EXPENSIVE_BURST.caller))
  if (tenantExpensiveReadsPerMinute > 0) limits.push(burstLimit(`tenant-expensive:${actor.tenantId}`, tenantExpensiveReadsPerMinute, EXPENSIVE_BURST.tenant))
  if (limits.length === 0) return
  // An expensive read is a GET.
  const decision = await decideUnlessBusyRead(deps, limits, true)
  if (decision && !decision.allowed) throw problems.rateLimited(decision.retryAfterSeconds)
}
