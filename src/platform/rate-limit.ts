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
  deps: Deps,
  limits: readonly LocalLimit[],
  read: boolean,
  ride?: { rider: Rider; tenantId: string },
): Promise<RateDecision & { epoch: number | null; rode?: Rode }> {
  const raw = rawSql(deps.db)
  const tenant = ride ? [ride.tenantId] : []
  // With the credentials' change counter (src/platform/auth-epoch.ts), read in the same round trip:
  // what confirms a verification kept in memory (src/platform/access.ts); and the route's rider.
  // A read of one bucket (every read by a token or a member) spends what this process leased; one
  // block at a time is on its way, and a request that finds one waits for it.
  const one = read && limits.length === 1 && limits[0]!.limit >= LEASE_MIN_LIMIT ? limits[0]! : null
  if (one) await leases(deps).get(one.bucket)?.taking
  const now = deps.clock.nowUs()
  const lease = one ? leaseOf(deps, one, now) : null
  let row: Record<string, unknown>
  if (lease?.spend) {
    row = (await raw.objects(sharedStatement('read', ride?.rider), ...tenant))[0]!
  } else if (one && lease && lease.size > 1) {
    // The block, taken only while the bucket keeps half its burst free after it; else the request alone.
    const block = { bucket: one.bucket, limit: one.limit / (2 * lease.size), periodSeconds: one.periodSeconds / 2 }
    try {
      row = (await raw.objects(sharedStatement('lease', ride?.rider), bucketsJson(limits), now, bucketsJson([block]), ...tenant))[0]!
      if (Number(row.retry) <= 0) lease.taken(Number(row.lease_retry) > 0 ? 1 : lease.size)
    } finally {
      lease.arrived()
    }
  } else {
    row = (await raw.objects(sharedStatement('count', ride?.rider), bucketsJson(limits), now, ...tenant))[0]!
    if (Number(row.retry) <= 0) lease?.taken(1)
  }
  const epoch = row.epoch === null ? null : Number(row.epoch)
  const retry = Number(row.retry)
  if (retry > 0) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(retry / 1_000_000)), remaining: 0, epoch }
  const rode = ride && { rider: ride.rider, tenantId: ride.tenantId, row: row.rider_found === null ? null : row }
  return { allowed: true, retryAfterSeconds: 0, remaining: 0, epoch, rode }
}

function bucketsJson(limits: readonly LocalLimit[]): string {
  return JSON.stringify(
    limits.map(({ bucket, limit, periodSeconds }) => ({ bucket, interval_us: (periodSeconds * 1_000_000) / limit, period_us: periodSeconds * 1_000_000 })),
  )
}

/**
 * Leased counts (PostgreSQL; docs/scale-out.md "Leased counts"): a process takes a read bucket's
 * requests from the shared count a block at a time and spends them on its next requests, which then
 * send a statement that writes nothing (the credentials' change counter and the route's rider, read
 * by every request) instead of `rate_take`'s update: about 18 µs of PostgreSQL's CPU instead of 70,
 * and no wait on the bucket's row lock. What keeps it the same limit:
 * - A block is taken only while the bucket keeps half its burst free after it (the block's period
 *   is half the limit's); past that every request is taken alone, in the same statement, exactly as
 *   without leases, so refusals and Retry-After near the limit are unchanged.
 * - A block is spent within LEASE_TTL_US of the clock or dropped, and the next one is sized from
 *   what the last served: doubled when it ran out in time, one more than it served when its time
 *   ran out (none when it served one: a client slower than a request in LEASE_TTL_US is counted
 *   request by request). A block thus leaves at most one request of the count unused per
 *   LEASE_TTL_US, and a request is counted at most that long before it arrives.
 * - So a client under its limit is never refused: unused requests stop adding up at half the
 *   burst. Right after a steady stream near the limit, a burst may find up to half the burst used.
 * - Only a limit of LEASE_MIN_LIMIT a period or more is leased (the defaults are 2,400 a minute);
 *   a smaller one, and every write (two buckets), is counted request by request.
 */
const LEASE_MAX = 16
const LEASE_TTL_US = 250_000
const LEASE_MIN_LIMIT = 300
/** A bucket's block in this process: requests left, its size, requests served from it, and the block on its way. */
type Lease = { units: number; size: number; spent: number; expiresUs: number; taking: Promise<void> | null }
const leases = perDeps(() => new Map<string, Lease>())
type LeaseStep = { spend: boolean; size: number; taken(units: number): void; arrived(): void }
const SPEND: LeaseStep = { spend: true, size: 0, taken: () => {}, arrived: () => {} }

function leaseOf(deps: Deps, limit: LocalLimit, now: number): LeaseStep {
  const kept = leases(deps)
  const held = kept.get(limit.bucket)
  if (held && held.units > 0 && held.expiresUs > now) {
    held.units--
    held.spent++
    return SPEND
  }
  const ranOut = held !== undefined && held.units === 0 && held.expiresUs > now
  // Doubled when the last block ran out in time; else one more than it served (none for a client
  // slower than a request in LEASE_TTL_US: counted one by one, as without leases).
  const size = held === undefined ? 1 : ranOut ? Math.min(LEASE_MAX, Math.max(2, held.size * 2)) : held.spent >= 2 ? Math.min(LEASE_MAX, held.spent + 1) : 1
  let arrived = () => {}
  if (held && size > 1 && !held.taking) {
    const { promise, resolve } = Promise.withResolvers<void>()
    held.taking = promise
    arrived = () => {
      held.taking = null
      resolve()
    }
  }
  return {
    spend: false,
    size,
    arrived,
    taken: (units) => {
      if (kept.size >= 10_000 && !kept.has(limit.bucket)) for (const [bucket, l] of kept) if (l.expiresUs <= now) kept.delete(bucket)
      const entry = kept.get(limit.bucket)
      if (entry) {
        // A new block replaces what is left of an old one, which was counted longer ago.
        entry.units = units - 1
        entry.size = units
        entry.spent = 1
        entry.expiresUs = now + LEASE_TTL_US
      } else kept.set(limit.bucket, { units: units - 1, size: units, spent: 1, expiresUs: now + LEASE_TTL_US, taking: null })
    },
  }
}

const EPOCH = '(SELECT n FROM auth_epoch WHERE id = 1) AS epoch'
const statements = new Map<string, string>()

/**
 * A shared count's statement: `count` takes the request ($1 its buckets, $2 now); `lease` takes the
 * block ($3) and, when that is refused, the request alone; `read` takes nothing. Each reads the
 * credentials' change counter and the rider's row (its tenant the next placeholder).
 */
function sharedStatement(kind: 'count' | 'lease' | 'read', rider: Rider | undefined): string {
  const key = `${kind}\n${rider?.select ?? ''}`
  let text = statements.get(key)
  if (text !== undefined) return text
  // rate_take in FROM runs once; the CASE takes the request alone only when the block was refused.
  let select =
    kind === 'count'
      ? `rate_take($1, $2) AS retry, ${EPOCH}`
      : kind === 'lease'
        ? `CASE WHEN l.r > 0 THEN rate_take($1, $2) ELSE 0 END AS retry, l.r AS lease_retry, ${EPOCH}`
        : `0 AS retry, ${EPOCH}`
  let from = kind === 'lease' ? ' FROM (SELECT rate_take($3, $2) AS r) AS l' : ''
  if (rider) {
    const tenant = kind === 'count' ? '$3' : kind === 'lease' ? '$4' : '$1'
    select += ', rider.*'
    if (!from) from = ' FROM (SELECT 1) AS one'
    // LIMIT 1 around the select: rate_take runs once per row of the answer, and there is one.
    from += ` LEFT JOIN LATERAL (SELECT 1 AS rider_found, r.* FROM (${rider.select.replaceAll('{tenant}', tenant)}) AS r LIMIT 1) AS rider ON true`
  }
  text = `SELECT ${select}${from}`
  statements.set(key, text)
  return text
}

/**
 * A read that rides on the rate limit's statement on PostgreSQL: the first read of a route every
 * request makes (GET /servers' fleet snapshot head), sent in the round trip the request pays anyway
 * instead of one of its own; a read by token is then one statement, not two (docs/scale-out.md "One
 * round trip for a read by token"). `select` reads at most one row, with `{tenant}` for the
 * caller's tenant, and names no column `retry`, `lease_retry`, `epoch` or `rider_found`. The route's
 * handler takes the row with `rodeFor`, and reads for itself when nothing rode: SQLite (no statement
 * to ride on), no limit configured, a refused or busy count, or a caller of another tenant.
 */
export type Rider = { name: string; select: string }

/** What a rider read: its row, or null when its select found none. */
export type Rode = { rider: Rider; tenantId: string; row: Record<string, unknown> | null }

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
  read: boolean,
  ride?: { rider: Rider; tenantId: string },
): Promise<RateDecision & { epoch?: number | null; rode?: Rode }> {
  // On PostgreSQL several instances serve one tenant: the count is theirs together (docs/scale-out.md).
  return deps.config.postgresUrl ? await consumeShared(deps, limits, read, ride) : requestRateLimiter(deps).consume(limits)
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
    return await decide(deps, limits, read, ride)
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
