import type { Database_, Db } from '../../db/client'
import type { Durability } from '../../db/durability'
import type { Config } from '../config'
import type { AppEvents } from '../events'
import type { EventBus } from './events'
import type { Clock, TestClock } from './clock'
import type { Logger } from './logger'

/**
 * What the service layer runs with: no HTTP in here. Routes build one per request
 * (adding the caller once authentication exists); jobs build one as the system.
 */
export type Deps = {
  config: Config
  clock: Clock
  /** Present only when TEST_CLOCK=true. */
  testClock: TestClock | null
  db: Db
  /**
   * The open database: `kind`, and what only one of them has (`sqlite`: the file's connection for
   * PRAGMAs and group commit; `postgres`: the pool). Statements go through `db` on either.
   */
  database: Database_
  /**
   * Group commit (db/durability.ts): await `durable.barrier()` before anything leaves the process on
   * the strength of a write. src/server.ts does it for every answer, the outbound clients before
   * each request.
   */
  durable: Durability
  newId: () => string
  log: Logger
  keys: Keys
  /** Cross-module reactions, wired by the composition root (src/reactions.ts). */
  events: EventBus<AppEvents>
  /** Sends queued mail after commit (src/modules/mail/mail.outbox.ts). */
  mail: { kick(): void; dispatchDue(): Promise<number>; idle(): Promise<void> }
}

/** Keys derived from SECRET_KEY, one per purpose (src/platform/secrets.ts). */
type Keys = {
  cursor: Buffer
  idempotency: Buffer
  /** HMAC key for email addresses in rate-limit buckets and code rows. */
  email: Buffer
  /** HMAC key for emailed codes. */
  codes: Buffer
  /** AES-GCM key for mail bodies waiting in the outbox (they may hold a code). */
  mail: Buffer
  /** AES-GCM key for marketplace API keys at rest. */
  marketplaceKeys: Buffer
  /** HMAC key for the hash that tells the same marketplace key from a new one. */
  marketplaceKeyHash: Buffer
}

/**
 * A process-local companion of a Deps (a cache, a registry of live sessions), made on first use:
 * `const fleetRuntime = perDeps((deps) => new FleetRuntime(deps))`. Tests build several Deps in
 * one process; each gets its own.
 */
export function perDeps<T>(create: (deps: Deps) => T): (deps: Deps) => T {
  const made = new WeakMap<Deps, T>()
  return (deps) => {
    let value = made.get(deps)
    if (value === undefined) made.set(deps, (value = create(deps)))
    return value
  }
}
