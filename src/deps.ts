import { migrateDatabase, openDatabase, setBusyTimeout } from '../db/client'
import { fsyncedByCommit, groupCommit } from '../db/durability'
import type { Config } from './config'
import { SystemClock, TestClock, type Clock } from './platform/clock'
import type { Deps } from './platform/context'
import { createIdGenerator } from './platform/ids'
import { createLogger, type Logger } from './platform/logger'
import { deriveKey } from './platform/secrets'
import { formatTimestamp } from './platform/time'
import { loadClockOffset, saveClockOffset } from './modules/testing'
import { createMailTransport, MailDispatcher, type MailTransport } from './modules/mail'
import { createEventBus } from './platform/events'
import type { AppEvents } from './events'
import { registerReactions } from './reactions'
import { provideFleetFacts } from './fleet-facts'

/**
 * The service's wait for another process's write lock, per statement. bun:sqlite waits on the event
 * loop, so it is kept short; src/server.ts retries a busy request asynchronously, then answers 503.
 */
export const SERVICE_BUSY_TIMEOUT_MS = 5

/**
 * The service's wait for a row lock on PostgreSQL (lock_timeout). A wait there holds one
 * connection, not the event loop, and the process's own transactions now run side by side and
 * meet each other's row locks for a few milliseconds: they wait it out. A lock held longer (another
 * process's maintenance, a stuck transaction) still ends in the busy handling and 503.
 */
const SERVICE_LOCK_TIMEOUT_PG_MS = 1000

/** The service's busy timeout for this database (above). */
export function serviceBusyTimeout(database: { kind: 'sqlite' | 'postgres' }): number {
  return database.kind === 'postgres' ? SERVICE_LOCK_TIMEOUT_PG_MS : SERVICE_BUSY_TIMEOUT_MS
}

/**
 * Builds what every verb runs with: the database (migrated), the one clock, ids, keys and the log.
 * With TEST_CLOCK the clock's offset is kept in the database, so a restarted process keeps the
 * time a test moved it to.
 */
export async function buildDeps(
  config: Config,
  /** busyTimeoutMs: operator commands and tools wait for the lock like a person would (DEFAULT_BUSY_TIMEOUT_MS). */
  options: {
    log?: Logger
    mailTransport?: MailTransport
    busyTimeoutMs?: number
    /**
     * false: every commit fsyncs itself (synchronous=FULL), for tools that print "done" after a
     * write without going through a barrier (scripts/admin). The service groups commits.
     */
    groupCommit?: boolean
    /** Connections in the PostgreSQL pool (DB_POOL_SIZE); nothing on SQLite. */
    poolSize?: number
  } = {},
): Promise<Deps> {
  // Migrations may wait for another process's lock; requests then wait only briefly (db/client.ts).
  const database = openDatabase(config.postgresUrl ?? config.databasePath, { poolSize: options.poolSize ?? config.dbPoolSize })
  await migrateDatabase(database)
  // On PostgreSQL this is the wait for a row lock (lock_timeout; db/pg/pool.ts).
  setBusyTimeout(database, options.busyTimeoutMs ?? serviceBusyTimeout(database))
  // Migrations above were fsynced commit by commit; from here on commits share fsyncs. A
  // PostgreSQL commit is durable when it returns (synchronous_commit): nothing to group.
  const groups = options.groupCommit !== false && config.databasePath !== ':memory:' && !database.postgres
  const durable = groups && database.sqlite ? groupCommit(database.sqlite, database.path) : fsyncedByCommit
  let testClock: TestClock | null = null
  let clock: Clock = new SystemClock()
  if (config.testClock) {
    testClock = new TestClock(await loadClockOffset(database.db), (offset) => saveClockOffset(database.db, offset, testClock!.nowUs()))
    clock = testClock
  }
  const log = options.log ?? createLogger(config.logLevel, () => formatTimestamp(clock.nowUs()))
  const mailKey = deriveKey(config.secretKey, 'mail-bodies')
  const mail = new MailDispatcher({ db: database.db, clock, log, key: mailKey, durable }, options.mailTransport ?? createMailTransport(config, log))
  const deps: Deps = {
    config,
    events: createEventBus<AppEvents>(),
    mail,
    clock,
    testClock,
    db: database.db,
    database,
    durable,
    newId: createIdGenerator(clock),
    log,
    keys: {
      cursor: deriveKey(config.secretKey, 'cursor'),
      idempotency: deriveKey(config.secretKey, 'idempotency-responses'),
      email: deriveKey(config.secretKey, 'email-hash'),
      codes: deriveKey(config.secretKey, 'email-codes'),
      marketplaceKeys: deriveKey(config.secretKey, 'marketplace-keys'),
      marketplaceKeyHash: deriveKey(config.secretKey, 'marketplace-key-hash'),
      mail: mailKey,
    },
  }
  // Cross-module reactions belong to the composition root, not to whichever routes were built.
  registerReactions(deps)
  // The fleet rows' marketplace, price, revenue and health, read from the modules above fleet.
  provideFleetFacts(deps)
  return deps
}
