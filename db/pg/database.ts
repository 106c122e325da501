import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads'
import type { PgReply, PgRequest, PgSettings } from './protocol'
import { translateSql } from './translate'

/**
 * A synchronous PostgreSQL client with the part of bun:sqlite's `Database` that Drizzle's
 * bun-sqlite session and the repositories use (`prepare`/`query` → `run`/`all`/`get`/`values`,
 * `exec`, `run`, `transaction(fn)[behavior]()`, `close`), so the whole data layer (db/client.ts,
 * every repository, `withTransaction`) runs unchanged on either database (docs/scale-out.md).
 *
 * The connection lives in a worker thread (db/pg/worker.ts); each call posts the statement and
 * blocks this thread on `Atomics.wait` until the reply is there. That is what bun:sqlite does too:
 * a statement holds the event loop while it runs, so a synchronous transaction callback can never
 * let another request's statements in.
 *
 * Transactions are SERIALIZABLE and re-run from the start when PostgreSQL reports a serialization
 * failure (40001) or a deadlock (40P01); nested ones are savepoints.
 */
export class PgDatabase {
  readonly #worker: Worker
  readonly #port: MessagePort
  readonly #flag: Int32Array
  readonly #waitMs: number
  readonly #statements = new Map<string, PgStatement>()
  readonly #rollbackHooks: (() => void)[] = []
  #nextId = 0
  #depth = 0
  #closed = false
  /** Statements sent and transactions run, for the benchmark and the readiness check. */
  readonly counters = { statements: 0, transactions: 0, retries: 0 }

  constructor(
    readonly url: string,
    readonly settings: PgSettings,
  ) {
    const flag = new SharedArrayBuffer(4)
    this.#flag = new Int32Array(flag)
    const { port1, port2 } = new MessageChannel()
    this.#port = port1
    this.#worker = new Worker(new URL('./worker.ts', import.meta.url), { workerData: { port: port2, flag, url, settings }, transferList: [port2] })
    this.#worker.unref()
    this.#waitMs = settings.statementTimeoutMs + settings.connectTimeoutMs + 5_000
    this.#call({ id: 0, kind: 'open' })
  }

  get inTransaction(): boolean {
    return this.#depth > 0
  }

  prepare(text: string): PgStatement {
    let statement = this.#statements.get(text)
    if (statement) {
      this.#statements.delete(text)
    } else {
      statement = new PgStatement(this, translateSql(text).sql)
      if (this.#statements.size >= 1000) this.#statements.delete(this.#statements.keys().next().value!)
    }
    this.#statements.set(text, statement)
    return statement
  }

  query(text: string): PgStatement {
    return this.prepare(text)
  }

  /**
   * Runs SQL text; several statements without parameters go as one simple query (migrations).
   * SQLite's PRAGMAs have no meaning here and are skipped: PostgreSQL always enforces foreign keys
   * and a commit is durable when it returns; the wait for a lock is `lock_timeout`, which the
   * service's `PRAGMA busy_timeout = N` sets.
   */
  exec(text: string, ...params: unknown[]): { changes: number; lastInsertRowid: number } {
    if (this.#pragma(text)) return { changes: 0, lastInsertRowid: 0 }
    if (params.length) return this.run(text, params)
    this.#send('exec', translateSql(text).sql, [])
    return { changes: 0, lastInsertRowid: 0 }
  }

  run(text: string, params: unknown[] = []): { changes: number; lastInsertRowid: number } {
    if (this.#pragma(text)) return { changes: 0, lastInsertRowid: 0 }
    return this.prepare(text).run(...params)
  }

  /** True for a PRAGMA, done here (busy_timeout) or skipped (see exec). */
  #pragma(text: string): boolean {
    const pragma = /^\s*PRAGMA\s+(\w+)\s*(?:=\s*(\d+))?/i.exec(text)
    if (!pragma) return false
    if (pragma[1]!.toLowerCase() === 'busy_timeout' && pragma[2] !== undefined) this.#send('exec', `SET lock_timeout = ${Math.max(1, Number(pragma[2]))}`, [])
    return true
  }

  /**
   * bun:sqlite's transaction: `db.transaction(fn)` is a function that runs `fn` in a transaction,
   * with `.deferred`, `.immediate` and `.exclusive` variants (all SERIALIZABLE here). A transaction
   * that loses a serialization conflict is rolled back and `fn` runs again (at most
   * MAX_ATTEMPTS times, with a short random pause): `fn` must keep nothing outside the database
   * from an attempt that rolled back (db/client.ts `onRollback`).
   */
  transaction<A extends unknown[], T>(fn: (...args: A) => T): ((...args: A) => T) & Record<'deferred' | 'immediate' | 'exclusive', (...args: A) => T> {
    const run = (...args: A): T => (this.#depth > 0 ? this.#savepoint(fn, args) : this.#topLevel(fn, args))
    return Object.assign(run, { deferred: run, immediate: run, exclusive: run })
  }

  /** Registers `fn` to run if the open transaction rolls back (its in-memory effects undone before a retry). */
  onRollback(fn: () => void): void {
    if (this.#depth > 0) this.#rollbackHooks.push(fn)
  }

  /**
   * Calls `handler` with the payload of every NOTIFY on `channel` (from any process on this
   * database, this one included), on this thread's event loop, over a connection of its own (Bun's
   * client reconnects it and listens again when it drops). Answers a function that stops it.
   */
  listen(channel: string, handler: (payload: string) => void): () => void {
    this.#listener ??= new Bun.SQL(this.url, { max: 1 })
    const listening = this.#listener.listen(channel, handler)
    this.#listening.push(listening)
    listening.catch(() => {}) // a database that is down: the statements say so where it matters
    return () => void listening.then((s) => s.unlisten()).catch(() => {})
  }

  #listener: InstanceType<typeof Bun.SQL> | null = null
  readonly #listening: Promise<{ unlisten(): Promise<void> }>[] = []

  /** Resolves once every listen() so far is acknowledged by the server. */
  async listening(): Promise<void> {
    await Promise.all(this.#listening)
  }

  close(): void {
    if (this.#closed) return
    const listener = this.#listener
    if (listener) void listener.close({ timeout: 1 }).catch(() => {})
    try {
      this.#call({ id: 0, kind: 'close' })
    } catch {
      // A connection that is already gone closes anyway.
    }
    this.#closed = true
    this.#port.close()
    void this.#worker.terminate()
  }

  #topLevel<A extends unknown[], T>(fn: (...args: A) => T, args: A): T {
    for (let attempt = 1; ; attempt++) {
      this.#send('exec', 'BEGIN ISOLATION LEVEL SERIALIZABLE', [])
      this.#depth = 1
      this.counters.transactions++
      let result: T
      try {
        result = fn(...args)
        this.#send('exec', 'COMMIT', [])
      } catch (e) {
        this.#depth = 0
        try {
          this.#send('exec', 'ROLLBACK', [])
        } catch {
          // The connection broke: the server rolled the transaction back itself.
        }
        this.#undo()
        if (mayRunAgain(e, attempt)) {
          this.counters.retries++
          Bun.sleepSync(Math.random() * Math.min(50, 2 ** attempt))
          continue
        }
        throw e
      }
      this.#depth = 0
      this.#rollbackHooks.length = 0
      return result
    }
  }

  #savepoint<A extends unknown[], T>(fn: (...args: A) => T, args: A): T {
    const name = `bun_sp${this.#depth}`
    this.#send('exec', `SAVEPOINT ${name}`, [])
    this.#depth++
    const hooks = this.#rollbackHooks.length
    try {
      const result = fn(...args)
      this.#send('exec', `RELEASE SAVEPOINT ${name}`, [])
      return result
    } catch (e) {
      this.#send('exec', `ROLLBACK TO SAVEPOINT ${name}`, [])
      this.#undo(hooks)
      throw e
    } finally {
      this.#depth--
    }
  }

  #undo(from = 0): void {
    const hooks = this.#rollbackHooks.splice(from)
    for (let i = hooks.length - 1; i >= 0; i--) hooks[i]!()
  }

  /** One statement, synchronously. */
  send(kind: 'values' | 'objects' | 'run', sql: string, params: unknown[]): { rows: unknown[]; changes: number } {
    return this.#send(kind, sql, params)
  }

  #send(kind: 'values' | 'objects' | 'run' | 'exec', sql: string, params: unknown[]): { rows: unknown[]; changes: number } {
    if (this.#closed) throw new PostgresError('the database connection is closed', 'XX000', null)
    this.counters.statements++
    const reply = this.#call(kind === 'exec' ? { id: 0, kind, sql } : { id: 0, kind, sql, params })
    if (reply.error) throw new PostgresError(reply.error.message, reply.error.sqlState, reply.error.constraint)
    return reply
  }

  #call(request: PgRequest): PgReply {
    const id = ++this.#nextId
    this.#port.postMessage({ ...request, id })
    const deadline = performance.now() + this.#waitMs
    for (;;) {
      const seen = Atomics.load(this.#flag, 0)
      if (seen >= id) break
      const left = deadline - performance.now()
      // The worker did not answer in time (a dead network, a hung server): this statement fails;
      // its late reply is skipped below when the next one comes.
      if (left <= 0) throw new PostgresError('the database did not answer in time', '57014', null)
      Atomics.wait(this.#flag, 0, seen, left)
    }
    for (;;) {
      const got = receiveMessageOnPort(this.#port)
      if (!got) throw new PostgresError('the database worker lost a reply', '08006', null)
      const reply = got.message as PgReply
      if (reply.id === id) return reply
    }
  }
}

const MAX_ATTEMPTS = 10
/** Attempts of a transaction that met a unique violation (see mayRunAgain). */
const MAX_UNIQUE_ATTEMPTS = MAX_ATTEMPTS

/**
 * 40001 serialization_failure and 40P01 deadlock_detected: the transaction simply runs again.
 * 23505 unique_violation too, a few times: under SQLite's one writer a transaction that checked
 * "not there yet" could insert safely; here another instance may have inserted the same key and
 * committed between the check and the insert (PostgreSQL reports that as a unique violation when
 * the check read another table, as the hourly charge's does). Run again, the check sees the row and
 * the work takes its "already done" path; a real duplicate fails again and is thrown.
 */
function mayRunAgain(e: unknown, attempt: number): boolean {
  for (let x = e, depth = 0; x && depth < 5; x = (x as { cause?: unknown }).cause, depth++) {
    if (x instanceof PostgresError) {
      if (x.code === '40001' || x.code === '40P01') return attempt < MAX_ATTEMPTS
      if (x.code === '23505') return attempt < MAX_UNIQUE_ATTEMPTS
      return false
    }
  }
  return false
}

/** A statement PostgreSQL refused: `code` is its SQLSTATE (23505 unique_violation, 40001, …). */
class PostgresError extends Error {
  override name = 'PostgresError'
  constructor(
    message: string,
    readonly code: string,
    readonly constraint: string | null,
  ) {
    super(message)
  }
}

/** A prepared statement as bun:sqlite offers it; the SQL is already translated (db/pg/translate.ts). */
class PgStatement {
  constructor(
    readonly db: PgDatabase,
    readonly sql: string,
  ) {}

  run(...params: unknown[]): { changes: number; lastInsertRowid: number } {
    return { changes: this.db.send('run', this.sql, params).changes, lastInsertRowid: 0 }
  }

  all(...params: unknown[]): Record<string, unknown>[] {
    return this.db.send('objects', this.sql, params).rows as Record<string, unknown>[]
  }

  get(...params: unknown[]): Record<string, unknown> | null {
    return (this.db.send('objects', this.sql, params).rows[0] as Record<string, unknown> | undefined) ?? null
  }

  values(...params: unknown[]): unknown[][] {
    return this.db.send('values', this.sql, params).rows as unknown[][]
  }

  finalize(): void {}

  toString(): string {
    return this.sql
  }
}
