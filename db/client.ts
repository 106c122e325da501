import { Database, type Statement } from 'bun:sqlite'
import { AsyncLocalStorage } from 'node:async_hooks'
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import type { SQLiteTransaction } from 'drizzle-orm/sqlite-core'
import type { ExtractTablesWithRelations } from 'drizzle-orm'
import * as schema from './schema'
import { PgDatabase } from './pg/database'
import { migratePostgres, pendingPgMigrations } from './pg/migrate'

type Schema = typeof schema
export type Db = BunSQLiteDatabase<Schema>
export type Tx = SQLiteTransaction<'sync', void, Schema, ExtractTablesWithRelations<Schema>>
/** Either the database or an open transaction: repositories take this and never care which. */
export type DbOrTx = Db | Tx

export const MIGRATIONS_FOLDER = resolve(import.meta.dir, 'migrations')

/**
 * An open database. `sqlite` is bun:sqlite's connection, or on PostgreSQL (`postgres` set) the
 * synchronous client that offers the same interface (db/pg/database.ts, docs/scale-out.md).
 */
export type Database_ = { sqlite: Database; db: Db; path: string; postgres?: PgDatabase }

/** True for a `postgres://` or `postgresql://` URL (src/config.ts accepts both as DATABASE_URL). */
function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url)
}

/** How long one statement may run on PostgreSQL before the server cancels it (a stuck database never freezes the process). */
const PG_STATEMENT_TIMEOUT_MS = 30_000

/**
 * Opens PostgreSQL behind the bun:sqlite interface, so Drizzle's bun-sqlite session and every
 * repository run on it unchanged. `busyTimeoutMs` is the wait for another transaction's row lock
 * (`lock_timeout`), SQLite's busy timeout's counterpart.
 */
function openPostgres(url: string, options: { busyTimeoutMs?: number }): Database_ {
  const pg = new PgDatabase(url, {
    lockTimeoutMs: Math.max(1, Math.trunc(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS)),
    statementTimeoutMs: PG_STATEMENT_TIMEOUT_MS,
    connectTimeoutMs: 10_000,
  })
  const sqlite = pg as unknown as Database
  return { sqlite, db: drizzle({ client: sqlite, schema }), path: redactedUrl(url), postgres: pg }
}

/** The URL without its password, for logs and health answers. */
function redactedUrl(url: string): string {
  try {
    const u = new URL(url)
    u.password = ''
    u.search = ''
    return u.toString()
  } catch {
    return 'postgres://'
  }
}

/**
 * How long a connection waits for another process's write lock by default: tools and operator
 * commands (scripts/admin, benchmarks) simply wait. The service passes a short wait instead
 * (DB_BUSY_TIMEOUT_MS): bun:sqlite waits on the event loop, so a long wait would freeze every
 * request; the HTTP layer retries asynchronously and then answers 503 (src/platform/busy.ts).
 */
export const DEFAULT_BUSY_TIMEOUT_MS = 10_000
/** Retry-After of the 503 a request gets when the database stayed busy through its retries. */
export const BUSY_RETRY_AFTER_SECONDS = 1
/**
 * Pauses between tries of work that met a busy database (about 1.3 s in all). Each pause yields the
 * event loop, so other requests run while another process holds the write lock.
 */
export const BUSY_PAUSES_MS: readonly number[] = [20, 40, 80, 160, 320, 640]

/**
 * Runs `fn`, and again after each of BUSY_PAUSES_MS while it fails on a busy database; the last
 * failure is thrown. Only for work that is safe to run again: a single transaction (nothing of it
 * was written), or a job that is idempotent for its period.
 */
export async function retryWhileBusy<T>(fn: () => T | Promise<T>, pauses: readonly number[] = BUSY_PAUSES_MS): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn()
    } catch (e) {
      if (!isDatabaseBusy(e) || attempt >= pauses.length) throw e
      await Bun.sleep(pauses[attempt]!)
    }
  }
}

/**
 * Opens the SQLite file with the pragmas every connection needs: WAL so readers never block the
 * writer, synchronous=FULL so a committed write survives power loss as well as a process crash
 * (docs/operations.md "Durability"), foreign keys on, and a busy timeout so a second process waits
 * for the write lock instead of failing at once. The file (and its -wal and -shm companions, which
 * SQLite creates with the database's mode) is 0600 in a 0700 directory: it holds hashes, sealed
 * secrets and money.
 */
export function openDatabase(path: string, options: { busyTimeoutMs?: number } = {}): Database_ {
  if (isPostgresUrl(path)) return openPostgres(path, options)
  if (path !== ':memory:') {
    const dir = dirname(path)
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 })
    if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600))
    restrictMode(path, 0o600)
  }
  const sqlite = new Database(path, { create: true, readwrite: true, strict: true })
  sqlite.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS))}`)
  sqlite.exec('PRAGMA journal_mode = WAL')
  sqlite.exec('PRAGMA synchronous = FULL')
  sqlite.exec('PRAGMA foreign_keys = ON')
  const db = drizzle({ client: withStatementCache(sqlite), schema })
  if (path !== ':memory:') {
    const st = statSync(path)
    fileIdentity.set(sqlite, { path, dev: st.dev, ino: st.ino })
  }
  return { sqlite, db, path }
}

const fileIdentity = new WeakMap<Database, { path: string; dev: number; ino: number }>()

/** Distinct statements kept per connection; past it the least recently used is dropped (and GC'd). */
const STATEMENT_CACHE_SIZE = 1000

/**
 * The connection as Drizzle sees it, with a statement cache. Drizzle's bun-sqlite session prepares
 * every query anew (`client.prepare(sql)` on each call, never finalized): SQLite then parses and
 * plans the same text again for every request. Here a statement is prepared once per distinct SQL
 * text and reused; bun:sqlite statements run to completion synchronously (`all`, `get`, `values`,
 * `run`), so one statement serves every caller in turn.
 */
function withStatementCache(sqlite: Database): Database {
  const cache = new Map<string, Statement>()
  const prepare = (text: string) => {
    let statement = cache.get(text)
    if (statement) {
      cache.delete(text) // most recently used goes last
    } else {
      statement = sqlite.prepare(text)
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!)
    }
    cache.set(text, statement)
    return statement
  }
  return new Proxy(sqlite, {
    get(target, key) {
      if (key === 'prepare') return prepare
      const value = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/**
 * True when the file this connection opened is gone or replaced (deleted data directory, a restore
 * copied over it): the open descriptor still answers queries, but nothing written lands where the
 * next start will look. /readyz reports it.
 */
export function databaseFileVanished(sqlite: Database): boolean {
  const id = fileIdentity.get(sqlite)
  if (!id) return false
  try {
    const st = statSync(id.path)
    return st.ino !== id.ino || st.dev !== id.dev
  } catch {
    return true
  }
}

/** Narrows a file's mode when it is wider (a file made by an older build, or by hand). */
function restrictMode(path: string, mode: number): void {
  try {
    if ((statSync(path).mode & 0o777 & ~mode) !== 0) chmodSync(path, mode)
  } catch {
    // Not ours to change (a read-only mount, another owner): SQLite opening it says what matters.
  }
}

/**
 * True when `error` (or its cause: Drizzle wraps driver errors) is SQLite's SQLITE_BUSY: another
 * connection held the lock past the busy timeout. Nothing of the failed statement was written.
 */
export function isDatabaseBusy(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) return true
    // PostgreSQL (db/pg/database.ts): a row lock held past lock_timeout, a conflict that outlived its
    // retries, a statement past statement_timeout, a connection refused or lost.
    if (typeof code === 'string' && (e as Error).name === 'PostgresError' && PG_BUSY.test(code)) return true
    if (e instanceof Error && /^database is locked\b/.test(e.message)) return true
  }
  return false
}

/** The PostgreSQL client behind a database, or null on SQLite. */
function postgresOf(database: { sqlite: unknown }): PgDatabase | null {
  return database.sqlite instanceof PgDatabase ? database.sqlite : null
}

const PG_BUSY = /^(55P03|40001|40P01|57014|57P0[1-3]|53300|08...)$/

/**
 * Applies pending migrations. Two processes starting together may both see the same migration
 * pending; the loser's statements fail against the winner's tables, so it simply re-reads the
 * journal and finds nothing left to do.
 */
export function migrateDatabase(database: Database_): void {
  const pg = postgresOf(database)
  if (pg) {
    migratePostgres(pg)
    return
  }
  for (let attempt = 1; ; attempt++) {
    try {
      migrate(database.db, { migrationsFolder: MIGRATIONS_FOLDER })
      return
    } catch (e) {
      if (attempt >= 5 || pendingMigrations(database) === 0) {
        if (pendingMigrations(database) === 0) return
        throw e
      }
      Bun.sleepSync(50 * attempt)
    }
  }
}

/** How many migrations of this build the database has not applied yet. */
export function pendingMigrations(database: Database_): number {
  const pg = postgresOf(database)
  if (pg) return pendingPgMigrations(pg)
  const all = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER })
  let applied: { hash: string }[] = []
  try {
    applied = database.sqlite.query('SELECT hash FROM __drizzle_migrations').all() as { hash: string }[]
  } catch {
    return all.length
  }
  const hashes = new Set(applied.map((r) => r.hash))
  return all.filter((m) => !hashes.has(m.hash)).length
}

/**
 * Watches the top-level write transactions of one unit of work (a request): `began(tx)` runs inside
 * each, before its callback, in that transaction. The idempotency layer marks a claimed key
 * "executed" there, atomically with the request's first write (src/platform/idempotency.ts), so a
 * crash after that commit can never run the request twice. The watcher belongs to the request
 * (AsyncLocalStorage), not to the process: nothing here changes at run time.
 */
export type TransactionWatcher = { began(tx: Tx): void }
export const transactionWatchers = new AsyncLocalStorage<TransactionWatcher>()

/**
 * Rows a write changed. bun:sqlite's run() reports it, but Drizzle's bun-sqlite types say void.
 */
export function changesOf(result: unknown): number {
  return (result as { changes: number }).changes
}

/**
 * A Drizzle query built once per connection instead of on every call, for the lookups every request
 * makes (the caller behind a token or cookie, its tenant, the fleet snapshot): building the SQL text
 * through the query builder costs several times what SQLite then takes to answer. `build` returns
 * `db.select()…prepare()` with `sql.placeholder(name)` for the values; callers pass them to
 * `.get({ name })` / `.all({ name })`. Works on the database and inside a transaction alike (one
 * connection: the statement runs in whatever transaction is open).
 *
 *   const byId = preparedQuery((db) => db.select().from(users).where(eq(users.id, sql.placeholder('id'))).prepare())
 *   export const findUserById = (db: DbOrTx, id: string) => byId(db).get({ id })
 */
export function preparedQuery<Q>(build: (db: Db) => Q): (db: DbOrTx) => Q {
  const made = new WeakMap<object, Q>()
  return (db) => {
    // A transaction shares its database's session (and connection): one prepared query serves both.
    const session = (db as unknown as { session: object }).session
    let query = made.get(session)
    if (query === undefined) made.set(session, (query = build(db as Db)))
    return query
  }
}

function isTransaction(db: DbOrTx): db is Tx {
  return (db as { nestedIndex?: number }).nestedIndex !== undefined
}

/**
 * The one way to write. Outside a transaction it opens `BEGIN IMMEDIATE` (takes the write lock
 * first, so a read-then-write never fails with SQLITE_BUSY halfway); inside one it nests as a
 * savepoint, so a verb can call another verb and both commit or roll back together.
 *
 * The callback must be synchronous: bun:sqlite is synchronous, and an `await` inside a
 * transaction would let other requests' statements run inside it.
 */
export function withTransaction<T>(db: DbOrTx, fn: (tx: Tx) => T): T {
  // Refused before it runs: whatever an async callback writes after its first await would land
  // outside the transaction, after the rollback below.
  if (fn.constructor.name === 'AsyncFunction') throw new Error('withTransaction callbacks must be synchronous')
  const guarded = (tx: Tx): T => {
    if (!isTransaction(db)) transactionWatchers.getStore()?.began(tx)
    const result = fn(tx)
    if (result instanceof Promise) throw new Error('withTransaction callbacks must be synchronous')
    return result
  }
  if (isTransaction(db)) return db.transaction(guarded) as T
  return db.transaction(guarded as never, { behavior: 'immediate' }) as T
}

/**
 * Runs `undo` if the transaction `tx` is in rolls back, before anything else happens: on
 * PostgreSQL a transaction that lost a serialization conflict is rolled back and its callback runs
 * again (db/pg/database.ts), so an in-memory effect of the attempt that rolled back (a flag saying
 * "written") must be undone. On SQLite nothing runs a transaction twice: a rollback ends the work.
 */
export function onRollback(tx: Tx, undo: () => void): void {
  const client = (tx as unknown as { session: { client: unknown } }).session.client
  if (client instanceof PgDatabase) client.onRollback(undo)
}

/**
 * Tells every process on the same PostgreSQL database (NOTIFY): inside a transaction when it
 * commits (nothing if it rolls back), outside one at once. On SQLite, whose processes share one
 * machine and find their work on their own, it does nothing. Payloads are ids, never secrets.
 */
export function notifyOthers(db: DbOrTx, channel: string, payload: string): void {
  const client = (db as unknown as { session: { client: unknown } }).session.client
  if (client instanceof PgDatabase) client.run('SELECT pg_notify(?, ?)', [channel, payload])
}

/** Whether this database is PostgreSQL behind the bun:sqlite interface (db/pg/database.ts), for the few statements that differ. */
export function isPostgres(sqlite: unknown): boolean {
  return sqlite instanceof PgDatabase
}

/**
 * Makes the transactions that reach this line for `key` commit in the order they reached it: on
 * PostgreSQL a transaction-scoped advisory lock, held until commit or rollback; on SQLite, whose
 * writers run one at a time already, nothing. For rows that readers page through as "after the
 * last id I saw": a sequence hands out ids in the order of the calls, not of the commits, so
 * without it a reader could pass an id whose row commits a moment later and never see that row.
 */
export function commitInOrder(tx: DbOrTx, key: string): void {
  const client = (tx as unknown as { session: { client: unknown } }).session.client
  if (client instanceof PgDatabase) client.run('SELECT pg_advisory_xact_lock(hashtext(?))', [key])
}

/**
 * Calls `handler` with each payload notifyOthers sends on `channel`, on this process's event loop;
 * answers a function that stops it. Nothing on SQLite.
 */
export function onNotice(database: { sqlite: unknown }, channel: string, handler: (payload: string) => void): () => void {
  const pg = postgresOf(database)
  return pg ? pg.listen(channel, handler) : () => {}
}

/**
 * A write that is worth skipping rather than failing for (a last-used stamp, a sliding expiry):
 * when another process holds the write lock it is dropped, and the next request writes it.
 */
export function writeUnlessBusy(db: DbOrTx, fn: (tx: Tx) => void): boolean {
  try {
    withTransaction(db, fn)
    return true
  } catch (e) {
    if (isDatabaseBusy(e)) return false
    throw e
  }
}
