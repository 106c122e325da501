import { AsyncLocalStorage } from 'node:async_hooks'
import type { Executor, RunResult } from '../session'
import { runCommitHooks, type TxState } from '../sqlite-executor'

type Pool = InstanceType<typeof Bun.SQL>
type Reserved = Awaited<ReturnType<Pool['reserve']>>
type Connection = Pool | Reserved

export type PgSettings = {
  /** Longest wait for a row lock another transaction holds (lock_timeout): the service keeps it short and retries. */
  lockTimeoutMs: number
  /** Longest any one statement may run (statement_timeout): a stuck database never freezes a request for long. */
  statementTimeoutMs: number
  connectTimeoutMs: number
  /** Connections in the pool (DB_POOL_SIZE). */
  poolSize: number
}

type PgTxState = TxState & { conn: Reserved }

/**
 * PostgreSQL behind the asynchronous data layer (docs/scale-out.md): a pool of connections (Bun's
 * built-in client, `Bun.SQL`) on this thread's event loop. A statement outside a transaction takes
 * any free connection; a transaction reserves one from BEGIN to COMMIT, and the statements of the
 * code inside it (found through AsyncLocalStorage) go to that connection, while other requests'
 * statements run beside it on the others.
 *
 * Transactions are SERIALIZABLE and run again from the start when PostgreSQL reports a serialization
 * failure (40001), a deadlock (40P01) or a unique violation (23505, see mayRunAgain); nested ones
 * are savepoints. Values come back as bun:sqlite gives them: 64-bit integers as numbers (they are
 * microseconds and micro-USD, well inside 2^53), booleans as 1 and 0, bytea as bytes.
 */
export class PgExecutor implements Executor {
  #pool: Pool
  /** The pool of relaxed commits (`relaxed`), made at its first statement. */
  #relaxedPool: Pool | null = null
  readonly store = new AsyncLocalStorage<PgTxState>()
  #lockTimeoutMs: number
  #closed = false
  #listener: Pool | null = null
  readonly #listening: Promise<{ unlisten(): Promise<void> }>[] = []
  /** Statements sent and transactions run, for the benchmark and the readiness check. */
  readonly counters = { statements: 0, transactions: 0, retries: 0 }

  constructor(
    readonly url: string,
    readonly settings: PgSettings,
  ) {
    this.#lockTimeoutMs = settings.lockTimeoutMs
    this.#pool = this.#newPool()
  }

  get pool(): Pool {
    return this.#pool
  }

  #newPool(relaxed = false): Pool {
    const { url, settings } = this
    return new Bun.SQL(url, {
      max: relaxed ? Math.max(2, Math.ceil(settings.poolSize / 4)) : settings.poolSize,
      bigint: true,
      idleTimeout: 0,
      connectionTimeout: Math.ceil(settings.connectTimeoutMs / 1000),
      // gpuhq_compat first, pg_catalog after it: SQLite's functions the hand-written statements use
      // (db/migrations-pg/0001).
      connection: {
        search_path: 'public, gpuhq_compat, pg_catalog',
        lock_timeout: `${this.#lockTimeoutMs}`,
        statement_timeout: `${settings.statementTimeoutMs}`,
        idle_in_transaction_session_timeout: `${settings.statementTimeoutMs * 2}`,
        ...(relaxed ? { synchronous_commit: 'off' } : {}),
      },
    })
  }

  /**
   * The wait for a row lock held elsewhere (SQLite's busy timeout). Transactions set it for
   * themselves (SET LOCAL); statements outside one get it from their connection, so a change makes
   * a new pool (at start-up: migrations wait like an operator tool, requests briefly) and lets the
   * old one close once its statements are done.
   */
  setLockTimeout(ms: number): void {
    const next = Math.max(1, Math.trunc(ms))
    if (next === this.#lockTimeoutMs) return
    this.#lockTimeoutMs = next
    const old = this.#pool
    this.#pool = this.#newPool()
    void old.close({ timeout: 5 }).catch(() => {})
    const oldRelaxed = this.#relaxedPool
    this.#relaxedPool = null
    void oldRelaxed?.close({ timeout: 5 }).catch(() => {})
  }

  /** The transaction the caller is in, or null. */
  current(): PgTxState | null {
    const state = this.store.getStore()
    return state?.open ? state : null
  }

  #connection(): Connection {
    if (this.#closed) throw new PostgresError('the database connection is closed', 'XX000', null)
    return this.current()?.conn ?? this.pool
  }

  async #query<T>(params: unknown[], take: (c: Connection, params: unknown[]) => Promise<T>, relaxed = false): Promise<T> {
    this.counters.statements++
    try {
      return await take(relaxed ? this.#relaxedConnection() : this.#connection(), params.map(toDriver))
    } catch (e) {
      throw asPostgresError(e)
    }
  }

  #relaxedConnection(): Pool {
    if (this.#closed) throw new PostgresError('the database connection is closed', 'XX000', null)
    if (this.current()) throw new Error('a relaxed commit is a statement outside any transaction (db/client.ts relaxedDb)')
    this.#relaxedPool ??= this.#newPool(true)
    return this.#relaxedPool
  }

  /**
   * Statements that commit each on their own without waiting for the WAL to reach the disk
   * (`synchronous_commit = off`, on a small pool of their own): db/client.ts `relaxedDb` says which
   * writes may. PostgreSQL keeps the WAL's order, so such a commit is lost at a crash only with
   * nothing committed after it; a later ordinary commit flushes it too.
   */
  readonly relaxed: Executor = {
    values: (sql, params) => this.#values(sql, params, true),
    objects: (sql, params) => this.#objects(sql, params, true),
    run: (sql, params) => this.#run(sql, params, true),
  }

  values(sql: string, params: unknown[]): Promise<unknown[][]> {
    return this.#values(sql, params, false)
  }

  objects(sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    return this.#objects(sql, params, false)
  }

  run(sql: string, params: unknown[]): Promise<RunResult> {
    return this.#run(sql, params, false)
  }

  #values(sql: string, params: unknown[], relaxed: boolean): Promise<unknown[][]> {
    return this.#query(params, async (c, p) => ((await c.unsafe(sql, p).values()) as unknown[][]).map(rowValues), relaxed)
  }

  #objects(sql: string, params: unknown[], relaxed: boolean): Promise<Record<string, unknown>[]> {
    return this.#query(params, async (c, p) => ((await c.unsafe(sql, p)) as Record<string, unknown>[]).map(rowObject), relaxed)
  }

  #run(sql: string, params: unknown[], relaxed: boolean): Promise<RunResult> {
    return this.#query(params, async (c, p) => ({ changes: ((await c.unsafe(sql, p)) as { count?: number }).count ?? 0, lastInsertRowid: 0 }), relaxed)
  }

  /** SQL text without parameters, several statements allowed (migrations, SET). */
  async exec(sql: string): Promise<void> {
    await this.#query([], async (c) => {
      await c.unsafe(sql)
    })
  }

  /**
   * Runs `fn` in a transaction on a connection of its own (a savepoint when the caller is in one
   * already). A transaction that loses a serialization conflict is rolled back and `fn` runs again
   * (at most MAX_ATTEMPTS times, with a short random pause): `fn` must keep nothing outside the
   * database from an attempt that rolled back (db/client.ts `onRollback`).
   */
  async transaction<T>(fn: () => Promise<T> | T): Promise<T> {
    const outer = this.current()
    if (outer) return this.#savepoint(outer, fn)
    for (let attempt = 1; ; attempt++) {
      let conn: Reserved
      try {
        conn = await this.#connectionForTransaction()
      } catch (e) {
        throw asPostgresError(e)
      }
      let released = false
      const state: PgTxState = { open: true, depth: 1, rollbackHooks: [], commitHooks: [], kind: 'postgres', conn }
      this.counters.transactions++
      try {
        await conn.unsafe(`BEGIN ISOLATION LEVEL SERIALIZABLE; SET LOCAL lock_timeout = ${this.#lockTimeoutMs}`)
        const result = await this.store.run(state, fn)
        state.open = false
        await conn.unsafe('COMMIT')
        conn.release()
        released = true
        runCommitHooks(this.store, state)
        return result
      } catch (raw) {
        state.open = false
        const e = asPostgresError(raw)
        try {
          await conn.unsafe('ROLLBACK')
        } catch {
          // The connection broke: the server rolled the transaction back itself.
        }
        undo(state.rollbackHooks)
        state.commitHooks.length = 0
        if (mayRunAgain(e, attempt)) {
          this.counters.retries++
          await Bun.sleep(Math.random() * Math.min(50, 2 ** attempt))
          continue
        }
        throw e
      } finally {
        state.open = false
        if (!released) conn.release()
      }
    }
  }

  async #connectionForTransaction(): Promise<Reserved> {
    if (this.#closed) throw new PostgresError('the database connection is closed', 'XX000', null)
    return await this.pool.reserve()
  }

  async #savepoint<T>(state: PgTxState, fn: () => Promise<T> | T): Promise<T> {
    const name = `sp${state.depth}`
    await state.conn.unsafe(`SAVEPOINT ${name}`)
    state.depth++
    const hooks = state.rollbackHooks.length
    const commitHooks = state.commitHooks.length
    try {
      const result = await fn()
      await state.conn.unsafe(`RELEASE SAVEPOINT ${name}`)
      return result
    } catch (e) {
      await state.conn.unsafe(`ROLLBACK TO SAVEPOINT ${name}`).catch(() => {})
      undo(state.rollbackHooks, hooks)
      state.commitHooks.splice(commitHooks)
      throw asPostgresError(e)
    } finally {
      state.depth--
    }
  }

  /** Registers `fn` to run if the open transaction rolls back (its in-memory effects undone before a retry). */
  onRollback(fn: () => void): void {
    this.current()?.rollbackHooks.push(fn)
  }

  /**
   * Calls `handler` with the payload of every NOTIFY on `channel` (from any process on this
   * database, this one included), over a connection of its own (Bun's client reconnects it and
   * listens again when it drops). Answers a function that stops it.
   */
  listen(channel: string, handler: (payload: string) => unknown): () => void {
    this.#listener ??= new Bun.SQL(this.url, { max: 1 })
    const listening = (this.#listener as unknown as { listen(c: string, h: (p: string) => unknown): Promise<{ unlisten(): Promise<void> }> }).listen(
      channel,
      handler,
    )
    this.#listening.push(listening)
    listening.catch(() => {}) // a database that is down: the statements say so where it matters
    return () => void listening.then((s) => s.unlisten()).catch(() => {})
  }

  /** Resolves once every listen() so far is acknowledged by the server. */
  async listening(): Promise<void> {
    await Promise.all(this.#listening)
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    const listener = this.#listener
    if (listener) await listener.close({ timeout: 1 }).catch(() => {})
    await this.#relaxedPool?.close({ timeout: 1 }).catch(() => {})
    await this.pool.close({ timeout: 1 }).catch(() => {})
  }
}

function undo(hooks: (() => void)[], from = 0): void {
  const taken = hooks.splice(from)
  for (let i = taken.length - 1; i >= 0; i--) taken[i]!()
}

function fromDriver(value: unknown): unknown {
  if (typeof value === 'bigint') return value >= Number.MIN_SAFE_INTEGER && value <= Number.MAX_SAFE_INTEGER ? Number(value) : value.toString()
  if (typeof value === 'boolean') return value ? 1 : 0
  return value
}

function toDriver(value: unknown): unknown {
  if (value === undefined) return null
  if (typeof value === 'boolean') return value ? 1 : 0
  return value
}

function rowValues(row: unknown[]): unknown[] {
  for (let i = 0; i < row.length; i++) row[i] = fromDriver(row[i])
  return row
}

function rowObject(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key in row) out[key] = fromDriver(row[key])
  return out
}

const MAX_ATTEMPTS = 10

/**
 * 40001 serialization_failure and 40P01 deadlock_detected: the transaction simply runs again.
 * 23505 unique_violation too: under SQLite's one writer a transaction that checked "not there yet"
 * could insert safely; here another request or instance may have inserted the same key and
 * committed between the check and the insert (PostgreSQL reports that as a unique violation when
 * the check read another table, as the hourly charge's does). Run again, the check sees the row and
 * the work takes its "already done" path; a real duplicate fails again and is thrown.
 */
function mayRunAgain(e: unknown, attempt: number): boolean {
  for (let x = e, depth = 0; x && depth < 5; x = (x as { cause?: unknown }).cause, depth++) {
    if (x instanceof PostgresError) {
      if (x.code === '40001' || x.code === '40P01' || x.code === '23505') return attempt < MAX_ATTEMPTS
      return false
    }
  }
  return false
}

/** A statement PostgreSQL refused: `code` is its SQLSTATE (23505 unique_violation, 40001, …). */
export class PostgresError extends Error {
  override name = 'PostgresError'
  constructor(
    message: string,
    readonly code: string,
    readonly constraint: string | null,
  ) {
    super(message)
  }
}

/** Bun's error as a PostgresError with SQLite's words for what the service and its operators know from SQLite. */
function asPostgresError(e: unknown): unknown {
  if (e instanceof PostgresError) return e
  if (!(e instanceof Error)) return e
  const err = e as { message: string; errno?: string; code?: string; constraint?: string; detail?: string; table?: string; column?: string }
  const sqlState = typeof err.errno === 'string' && /^[0-9A-Z]{5}$/.test(err.errno) ? err.errno : connectionState(err.code)
  if (sqlState === 'XX000' && !/^ERR_POSTGRES/.test(err.code ?? '')) return e
  const mapped = new PostgresError(sqliteMessage(sqlState, err) ?? err.message, sqlState, err.constraint ?? null)
  return mapped
}

/**
 * A lock wait past lock_timeout, or a constraint violation, worded as SQLite words it ("UNIQUE
 * constraint failed: t.a, t.b"), with PostgreSQL's constraint name. The key's values (PostgreSQL's
 * detail) are left out: they may be hashes or personal data.
 */
function sqliteMessage(sqlState: string, err: { table?: string; column?: string; constraint?: string; detail?: string; message?: string }): string | null {
  const table = err.table ?? '?'
  if (sqlState === '55P03') return `database is locked (${err.message})`
  if (sqlState === '23505') {
    const columns = /^Key \((.+?)\)=/.exec(err.detail ?? '')?.[1]?.split(', ') ?? []
    return `UNIQUE constraint failed: ${columns.map((c) => `${table}.${c}`).join(', ')} (${err.constraint ?? 'unique'})`
  }
  if (sqlState === '23502') return `NOT NULL constraint failed: ${table}.${err.column ?? '?'}`
  if (sqlState === '23503') return `FOREIGN KEY constraint failed (${err.constraint ?? 'foreign key'})`
  if (sqlState === '23514') return `CHECK constraint failed: ${err.constraint ?? 'check'}`
  return null
}

/** Bun's client errors that never reached the server: the connection is what failed (class 08). */
function connectionState(code: string | undefined): string {
  return code && /CONNECTION|SOCKET|TLS|CLOSED|TIMEOUT/.test(code) ? '08006' : 'XX000'
}
