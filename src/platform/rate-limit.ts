import { eq, lt } from 'drizzle-orm'
import { rateLimits } from '../../db/schema'
import { withTransaction, type DbOrTx, changesOf } from '../../db/client'
import type { Clock } from './clock'
import { problems } from './problem'

/**
 * Rate limits by GCRA (the generic cell rate algorithm) kept in the database, so every process
 * sharing it counts against the same bucket: `limit` requests per `periodSeconds`, with bursts up to
 * `limit`. Each decision is one BEGIN IMMEDIATE transaction; two processes never both take the last
 * token.
 */
export type RateDecision = { allowed: boolean; retryAfterSeconds: number; remaining: number }

export function consumeRateLimit(
  db: DbOrTx,
  clock: Clock,
  bucket: string,
  limit: number,
  periodSeconds: number,
): RateDecision {
  if (!(limit >= 1) || !(periodSeconds > 0)) throw new RangeError('rate limit needs limit >= 1 and a positive period')
  const periodUs = periodSeconds * 1_000_000
  const intervalUs = periodUs / limit
  return withTransaction(db, (tx) => {
    const now = clock.nowUs()
    const row = tx.select().from(rateLimits).where(eq(rateLimits.bucket, bucket)).get()
    const tat = Math.max(row?.tat ?? now, now)
    const newTat = tat + intervalUs
    if (newTat - now > periodUs) {
      const retryUs = newTat - periodUs - now
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(retryUs / 1_000_000)), remaining: 0 }
    }
    const values = { bucket, tat: Math.round(newTat), expiresAt: Math.round(newTat) }
    tx.insert(rateLimits).values(values).onConflictDoUpdate({ target: rateLimits.bucket, set: { tat: values.tat, expiresAt: values.expiresAt } }).run()
    const remaining = Math.floor((periodUs - (newTat - now)) / intervalUs)
    return { allowed: true, retryAfterSeconds: 0, remaining }
  })
}

/** Consumes one request from the bucket or throws 429 rate_limited with Retry-After. */
export function enforceRateLimit(db: DbOrTx, clock: Clock, bucket: string, limit: number, periodSeconds: number): void {
  const decision = consumeRateLimit(db, clock, bucket, limit, periodSeconds)
  if (!decision.allowed) throw problems.rateLimited(decision.retryAfterSeconds)
}

/** Removes buckets whose state has fully drained; they behave exactly like absent ones. */
export function collectDrainedBuckets(db: DbOrTx, clock: Clock): number {
  const now = clock.nowUs()
  const result = withTransaction(db, (tx) => tx.delete(rateLimits).where(lt(rateLimits.expiresAt, now)).run())
  return changesOf(result)
}
