import { Database } from 'bun:sqlite'
import { AsyncLocalStorage } from 'node:async_hooks'
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { databaseOver, type Db, type RunResult } from './session'
import { SqliteExecutor } from './sqlite-executor'
import { PgExecutor, PostgresError } from './pg/pool'
import { migratePostgres, pendingPgMigrations } from './pg/migrate'

export type { Db, RunResult } from './session'
/** A transaction: the same database object (db/session.ts routes the statements of the code inside one to its connection). */
export type Tx = Db
/** Either the database or an open transaction: repositories take this and never care which. */
export type DbOrTx = Db

export const MIGRATIONS_FOLDER = resolve(import.meta.dir, 'migrations')

/**
 * An open database. `sqlite` is bun:sqlite's connection on SQLite (null on PostgreSQL), for what
 * only SQLite has (its file, PRAGMAs, group commit); `postgres` the pool on PostgreSQL.
 */
export type Database_ = {
  db: Db
  path: string
  kind: 'sqlite' | 'postgres'
  sqlite: Database | null
  postgres: PgExecutor | null
  /** Closes the connection (SQLite) or the pool (PostgreSQL). */
  close(): Promise<void>
}

/** True for a `postgres://` or `postgresql://` URL (src/config.ts accepts both as DATABASE_URL). */
function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url)
}

/** How long one statement may run on PostgreSQL before the server cancels it. */
const PG_STATEMENT_TIMEOUT_MS = 30_000
/** Connections per process on PostgreSQL unless DB_POOL_SIZE says otherwise (docs/scale-out.md "Pool"). */
const DEFAULT_PG_POOL_SIZE = 10

/**
 * Opens PostgreSQL: a pool of `poolSize` connections (db/pg/pool.ts) under Drizzle's SQLite query
 * builder speaking PostgreSQL's placeholders (db/session.ts). `busyTimeoutMs` is the wait for
 * another transaction's row lock (`lock_timeout`), SQLite's busy timeout's counterpart.
 */
function openPostgres(url: string, options: { busyTimeoutMs?: number; poolSize?: number }): Database_ {
  const pg = new PgExecutor(url, {
    lockTimeoutMs: Math.max(1, Math.trunc(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS)),
    statementTimeoutMs: PG_STATEMENT_TIMEOUT_MS,
    connectTimeoutMs: 10_000,
    poolSize: options.poolSize ?? DEFAULT_PG_POOL_SIZE,
  })
  const db = databaseOver(pg, 'postgres')
  executors.set(db, pg)
  relaxedDbs.set(db, databaseOver(pg.relaxed, 'postgres'))
  return { db, path: redactedUrl(url), kind: 'postgres', sqlite: null, postgres: pg, close: () => pg.close() }
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
export function openDatabase(path: string, options: { busyTimeoutMs?: number; poolSize?: number } = {}): Database_ {
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
  const executor = new SqliteExecutor(sqlite)
  const db = databaseOver(executor, 'sqlite')
  executors.set(db, executor)
  if (path !== ':memory:') {
    const st = statSync(path)
    fileIdentity.set(sqlite, { path, dev: st.dev, ino: st.ino })
  }
  return {
    db,
    path,
    kind: 'sqlite',
    sqlite,
    postgres: null,
    close: async () => executor.close(),
  }
}

/** The executor behind each database object (db/session.ts). */
const executors = new WeakMap<object, SqliteExecutor | PgExecutor>()

function executorOf(db: DbOrTx): SqliteExecutor | PgExecutor {
  const executor = executors.get(db)
  if (!executor) throw new Error('not a database opened by openDatabase (db/client.ts)')
  return executor
}

/**
 * Sets how long a statement waits for another process's write lock (SQLite's busy timeout) or
 * another transaction's row lock (PostgreSQL's lock_timeout).
 */
export function setBusyTimeout(database: Database_, ms: number): void {
  if (database.sqlite) database.sqlite.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.trunc(ms))}`)
  else database.postgres!.setLockTimeout(ms)
}

const fileIdentity = new WeakMap<Database, { path: string; dev: number; ino: number }>()

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
 * True when `error` (or its cause) is SQLite's SQLITE_BUSY: another connection held the lock past
 * the busy timeout, and nothing of the failed statement was written; on PostgreSQL a row lock held
 * past lock_timeout, a conflict that outlived its retries, a statement past statement_timeout, a
 * connection refused or lost.
 */
export function isDatabaseBusy(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) return true
    if (e instanceof PostgresError && PG_BUSY.test(e.code)) return true
    if (e instanceof Error && /^database is locked\b/.test(e.message)) return true
  }
  return false
}

const PG_BUSY = /^(55P03|40001|40P01|57014|57P0[1-3]|53300|08...)$/

/**
 * Applies pending migrations. Two processes starting together may both see the same migration
 * pending; the loser's statements fail against the winner's tables, so it simply re-reads the
 * journal and finds nothing left to do.
 */
export async function migrateDatabase(database: Database_): Promise<void> {
  if (database.postgres) {
    await migratePostgres(database.postgres)
    return
  }
  const sqlite = database.sqlite!
  for (let attempt = 1; ; attempt++) {
    try {
      // Drizzle's own migrator, over a synchronous Drizzle session on the same connection.
      migrate(drizzle({ client: sqlite }), { migrationsFolder: MIGRATIONS_FOLDER })
      return
    } catch (e) {
      if ((await pendingMigrations(database)) === 0) return
      if (attempt >= 5) throw e
      await Bun.sleep(50 * attempt)
    }
  }
}

/** How many migrations of this build the database has not applied yet. */
export async function pendingMigrations(database: Database_): Promise<number> {
  if (database.postgres) return await pendingPgMigrations(database.postgres)
  const all = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER })
  let applied: { hash: string }[] = []
  try {
    applied = database.sqlite!.query('SELECT hash FROM __drizzle_migrations').all() as { hash: string }[]
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
export type TransactionWatcher = { began(tx: Tx): Promise<void> | void }
export const transactionWatchers = new AsyncLocalStorage<TransactionWatcher>()

/** Rows a write changed. */
export function changesOf(result: RunResult): number {
  return result.changes
}

/**
 * A Drizzle query built once per database instead of on every call, for the lookups every request
 * makes (the caller behind a token or cookie, its tenant, the fleet snapshot): building the SQL text
 * through the query builder costs several times what the database then takes to answer. `build`
 * returns `db.select()…prepare()` with `sql.placeholder(name)` for the values; callers pass them to
 * `.get({ name })` / `.all({ name })`. Works inside a transaction and outside alike (the executor
 * sends it to the caller's transaction's connection).
 *
 *   const byId = preparedQuery((db) => db.select().from(users).where(eq(users.id, sql.placeholder('id'))).prepare())
 *   export const findUserById = (db: DbOrTx, id: string) => byId(db).get({ id })
 */
export function preparedQuery<Q>(build: (db: Db) => Q): (db: DbOrTx) => Q {
  const made = new WeakMap<object, Q>()
  return (db) => {
    let query = made.get(db)
    if (query === undefined) made.set(db, (query = build(db)))
    return query
  }
}

/**
 * The one way to write. Outside a transaction it opens one (SQLite: `BEGIN IMMEDIATE`, the write
 * lock first, so a read-then-write never fails with SQLITE_BUSY halfway, and no other request's
 * statement runs inside it; PostgreSQL: SERIALIZABLE on a connection of its own, run again on a
 * serialization failure); inside one it nests as a savepoint, so a verb can call another verb and
 * both commit or roll back together.
 *
 * The callback awaits only the database, never the network: on SQLite every other statement of the
 * process waits while it runs (db/sqlite-executor.ts).
 */
export async function withTransaction<T>(db: DbOrTx, fn: (tx: Tx) => Promise<T> | T): Promise<T> {
  const executor = executorOf(db)
  const nested = executor.current() !== null
  return await executor.transaction(async () => {
    if (!nested) await transactionWatchers.getStore()?.began(db)
    return await fn(db)
  })
}

/**
 * PostgreSQL's round trips and transactions so far on `db`'s pool (what a test counts a request's
 * statements by); null on SQLite, whose statements cost no round trip.
 */
export function roundTrips(db: DbOrTx): { statements: number; transactions: number } | null {
  const executor = executorOf(db)
  return executor instanceof PgExecutor ? { statements: executor.counters.statements, transactions: executor.counters.transactions } : null
}

/** True when the caller is inside a transaction on `db`. */
export function inTransaction(db: DbOrTx): boolean {
  return executorOf(db).current() !== null
}

/**
 * Runs `undo` if the transaction the caller is in rolls back, before anything else happens: on
 * PostgreSQL a transaction that lost a serialization conflict is rolled back and its callback runs
 * again (db/pg/pool.ts), so an in-memory effect of the attempt that rolled back (a flag saying
 * "written") must be undone. On SQLite nothing runs a transaction twice: a rollback ends the work.
 */
export function onRollback(tx: Tx, undo: () => void): void {
  const executor = executorOf(tx)
  if (executor instanceof PgExecutor) executor.onRollback(undo)
}

/**
 * Hand-written SQL, as written, on either database: the text uses PostgreSQL's numbered
 * placeholders `$1 … $n`, which SQLite reads too (a `$`-named parameter takes the next index at its
 * first appearance, so the numbers must first appear in order: checked once per text). Nothing in
 * the text is rewritten; where the databases differ the caller writes each form and picks one with
 * `isPostgres(db)`. Runs in the caller's transaction when it is in one, as everything else.
 * Prefer the query builder or Drizzle's `sql` tag; this is for the few statements kept as text
 * (telemetry's bulk reads and rollups, the fleet's presence flush, the ledger).
 */
export function rawSql(db: DbOrTx): {
  values<T extends unknown[] = unknown[]>(text: string, ...params: unknown[]): Promise<T[]>
  objects<T = Record<string, unknown>>(text: string, ...params: unknown[]): Promise<T[]>
  run(text: string, ...params: unknown[]): Promise<RunResult>
  /**
   * The same statement once per row of parameters, in order: on SQLite one prepared statement run
   * in a loop (no promise per row; what a bulk insert costs least there), elsewhere one after the
   * other. For many rows on PostgreSQL prefer one statement over a JSON document (jsonb_to_recordset).
   */
  runEach(text: string, rows: readonly unknown[][]): Promise<void>
} {
  const executor = executorOf(db)
  return {
    values: async (text, ...params) => (await executor.values(checkedPlaceholders(text), params)) as never,
    objects: async (text, ...params) => (await executor.objects(checkedPlaceholders(text), params)) as never,
    run: async (text, ...params) => await executor.run(checkedPlaceholders(text), params),
    runEach: async (text, rows) => {
      const checked = checkedPlaceholders(text)
      if (executor instanceof SqliteExecutor) return await executor.runEach(checked, rows)
      for (const row of rows) await executor.run(checked, row)
    },
  }
}

const checkedTexts = new Set<string>()

function checkedPlaceholders(text: string): string {
  if (checkedTexts.has(text)) return text
  let next = 1
  const seen = new Set<number>()
  for (const m of text.matchAll(/(?<![\w$])\$(\d+)\b|\?/g)) {
    if (m[0] === '?') throw new Error(`hand-written SQL takes $1…$n placeholders, not ?: ${text.slice(0, 80)}`)
    const n = Number(m[1])
    if (seen.has(n)) continue
    if (n !== next) throw new Error(`hand-written SQL must number its placeholders in order of first appearance ($${next} before $${n}): ${text.slice(0, 80)}`)
    seen.add(n)
    next++
  }
  if (checkedTexts.size < 10_000) checkedTexts.add(text)
  return text
}

/**
 * Runs `fn` once the transaction the caller is in has committed (nothing if it rolls back), outside
 * that transaction; outside a transaction, at once. For what must follow a write and never see it
 * uncommitted or undone: waking streams, kicking the mail outbox, moving a drain on. A timer set
 * inside a transaction is not enough: it may fire before the commit, and inside the transaction.
 */
export function afterCommit(db: DbOrTx, fn: () => void): void {
  const executor = executorOf(db)
  const state = executor.current()
  if (state) state.commitHooks.push(fn)
  else executor.store.exit(fn)
}

/**
 * Tells every process on the same PostgreSQL database (NOTIFY): inside a transaction when it
 * commits (nothing if it rolls back), outside one at once. On SQLite, whose processes share one
 * machine and find their work on their own, it does nothing. Payloads are ids, never secrets.
 */
export async function notifyOthers(db: DbOrTx, channel: string, payload: string): Promise<void> {
  const executor = executorOf(db)
  if (executor instanceof PgExecutor) await executor.run('SELECT pg_notify($1, $2)', [channel, payload])
}

const relaxedDbs = new WeakMap<object, Db>()

/**
 * The database for a write outside any transaction whose loss at a crash the service already
 * answers for, so that its commit need not wait for the disk. On PostgreSQL its statements commit
 * with `synchronous_commit = off` (db/pg/pool.ts `relaxed`): the commit is in the WAL at once and on
 * disk within PostgreSQL's WAL writer delay (200 ms by default), and a crash in between loses it
 * only with whatever committed after it. On SQLite it is `db` itself: the group commit makes every
 * statement durable before the answer that follows it leaves (db/durability.ts).
 *
 * One write is relaxed: an idempotent request's stored answer (src/platform/idempotency.ts
 * `finishKey`), whose loss leaves the key "executed" without an answer, as a crash between the
 * request's commit and the answer's always could (a retry is told to read the outcome).
 */
export function relaxedDb(db: DbOrTx): Db {
  const relaxed = relaxedDbs.get(db)
  if (!relaxed) return db as Db
  if (executorOf(db).current()) throw new Error('relaxedDb is for a statement outside any transaction')
  return relaxed
}

/** Whether this database is PostgreSQL, for the few hand-written statements that differ. */
export function isPostgres(db: DbOrTx): boolean {
  return executorOf(db) instanceof PgExecutor
}

/**
 * Makes the transactions that reach this line for `key` commit in the order they reached it: on
 * PostgreSQL a transaction-scoped advisory lock, held until commit or rollback; on SQLite, whose
 * writers run one at a time already, nothing. For rows that readers page through as "after the
 * last id I saw": a sequence hands out ids in the order of the calls, not of the commits, so
 * without it a reader could pass an id whose row commits a moment later and never see that row.
 */
export async function commitInOrder(tx: DbOrTx, key: string): Promise<void> {
  const executor = executorOf(tx)
  if (executor instanceof PgExecutor) await executor.run('SELECT pg_advisory_xact_lock(hashtext($1))', [key])
}

/**
 * Calls `handler` with each payload notifyOthers sends on `channel`, on this process's event loop;
 * answers a function that stops it. Nothing on SQLite.
 */
export function onNotice(database: Database_, channel: string, handler: (payload: string) => unknown): () => void {
  return database.postgres ? database.postgres.listen(channel, handler) : () => {}
}

/**
 * A write that is worth skipping rather than failing for (a last-used stamp, a sliding expiry):
 * when another process holds the write lock it is dropped, and the next request writes it.
 */
export async function writeUnlessBusy(db: DbOrTx, fn: (tx: Tx) => Promise<void> | void): Promise<boolean> {
  try {
    await withTransaction(db, fn)
    return true
  } catch (e) {
    if (isDatabaseBusy(e)) return false
    throw e
  }
}
