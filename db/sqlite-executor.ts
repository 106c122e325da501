import type { Database, Statement } from 'bun:sqlite'
import { AsyncLocalStorage } from 'node:async_hooks'
import type { Executor, RunResult } from './session'

/** Distinct statements kept per connection; past it the least recently used is dropped (and GC'd). */
const STATEMENT_CACHE_SIZE = 1000

/** The transaction a caller is in: its depth (savepoints) and the undos of its in-memory effects. */
export type TxState = {
  open: boolean
  depth: number
  rollbackHooks: (() => void)[]
  /** Run once the top-level transaction committed, outside it (db/client.ts `afterCommit`). */
  commitHooks: (() => void)[]
  kind: 'sqlite' | 'postgres'
}

/**
 * Runs what waited for a commit, outside the transaction's context (its statements go anywhere).
 * A hook that throws is reported and the others still run: the transaction has committed, and its
 * caller must not be told otherwise (it could do the work again).
 */
export function runCommitHooks(store: AsyncLocalStorage<TxState>, state: TxState): void {
  const hooks = state.commitHooks.splice(0)
  for (const hook of hooks) {
    try {
      store.exit(hook)
    } catch (error) {
      console.error('gpuhq: a step after a commit failed', error)
    }
  }
}

/**
 * bun:sqlite behind the asynchronous data layer (docs/scale-out.md "SQLite under await").
 *
 * One connection, as before: bun:sqlite answers synchronously, so a statement costs no thread hop
 * and no promise of its own beyond the `await` of its caller. What changes is that a transaction's
 * callback now awaits between its statements, and while it does, other requests' code runs. Their
 * statements must not land inside the open transaction (they would commit or roll back with it), so:
 *
 * - a transaction holds the write turn (a FIFO queue) from BEGIN IMMEDIATE to COMMIT;
 * - the statements of the code inside it (found through AsyncLocalStorage: the callback and
 *   everything it awaits) run at once on the connection;
 * - a statement of any other code waits while a transaction is open, and runs (on its own, in
 *   autocommit) when it ends. With no transaction open it runs at once.
 *
 * Transaction callbacks await only the database (never the network), so a turn lasts as long as
 * the same work took when it was synchronous.
 */
export class SqliteExecutor implements Executor {
  readonly #cache = new Map<string, Statement>()
  readonly store = new AsyncLocalStorage<TxState>()
  #holder: TxState | null = null
  readonly #queue: (() => void)[] = []

  constructor(readonly sqlite: Database) {}

  #statement(text: string): Statement {
    const cache = this.#cache
    let statement = cache.get(text)
    if (statement) {
      cache.delete(text) // most recently used goes last
    } else {
      statement = this.sqlite.prepare(text)
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!)
    }
    cache.set(text, statement)
    return statement
  }

  /** True when the caller may use the connection now: it is inside the open transaction, or none is open. */
  #mayRun(): boolean {
    const holder = this.#holder
    return holder === null || this.store.getStore() === holder
  }

  #turn(): Promise<void> {
    return new Promise((resolve) => this.#queue.push(resolve))
  }

  async #whenFree<T>(fn: () => T): Promise<T> {
    while (!this.#mayRun()) await this.#turn()
    return fn()
  }

  values(sql: string, params: unknown[]): unknown[][] | Promise<unknown[][]> {
    if (this.#mayRun()) return this.#statement(sql).values(...(params as never[])) as unknown[][]
    return this.#whenFree(() => this.#statement(sql).values(...(params as never[])) as unknown[][])
  }

  objects(sql: string, params: unknown[]): Record<string, unknown>[] | Promise<Record<string, unknown>[]> {
    if (this.#mayRun()) return this.#statement(sql).all(...(params as never[])) as Record<string, unknown>[]
    return this.#whenFree(() => this.#statement(sql).all(...(params as never[])) as Record<string, unknown>[])
  }

  run(sql: string, params: unknown[]): RunResult | Promise<RunResult> {
    if (this.#mayRun()) return this.#run(sql, params)
    return this.#whenFree(() => this.#run(sql, params))
  }

  /** `sql` once per row of `rows`, on one prepared statement (db/client.ts rawSql's runEach). */
  runEach(sql: string, rows: readonly unknown[][]): void | Promise<void> {
    const each = () => {
      const statement = this.#statement(sql)
      for (const row of rows) statement.run(...(row as never[]))
    }
    if (this.#mayRun()) return each()
    return this.#whenFree(each)
  }

  #run(sql: string, params: unknown[]): RunResult {
    const r = this.#statement(sql).run(...(params as never[]))
    return { changes: r.changes, lastInsertRowid: Number(r.lastInsertRowid) }
  }

  /** The transaction the caller is in, or null. */
  current(): TxState | null {
    const state = this.store.getStore()
    return state?.open ? state : null
  }

  /**
   * Runs `fn` in a transaction: BEGIN IMMEDIATE (the write lock first, so a read-then-write never
   * fails halfway on another process's lock), or a savepoint when the caller is in one already.
   */
  async transaction<T>(fn: () => Promise<T> | T): Promise<T> {
    const outer = this.current()
    if (outer) return this.#savepoint(outer, fn)
    while (this.#holder !== null) await this.#turn()
    const state: TxState = { open: true, depth: 1, rollbackHooks: [], commitHooks: [], kind: 'sqlite' }
    this.#holder = state
    try {
      this.sqlite.exec('BEGIN IMMEDIATE')
      try {
        const result = await this.store.run(state, fn)
        state.open = false
        this.sqlite.exec('COMMIT')
        this.#release()
        runCommitHooks(this.store, state)
        return result
      } catch (e) {
        state.open = false
        if (this.sqlite.inTransaction) {
          try {
            this.sqlite.exec('ROLLBACK')
          } catch {
            // SQLite rolled it back already (an I/O error, a full disk).
          }
        }
        throw e
      }
    } finally {
      state.open = false
      if (this.#holder === state) this.#release()
    }
  }

  #release(): void {
    this.#holder = null
    // Everyone waiting looks again: statements run, the first transaction takes the turn.
    const waiting = this.#queue.splice(0)
    for (const wake of waiting) wake()
  }

  async #savepoint<T>(state: TxState, fn: () => Promise<T> | T): Promise<T> {
    const name = `sp${state.depth}`
    this.sqlite.exec(`SAVEPOINT ${name}`)
    state.depth++
    const hooks = state.rollbackHooks.length
    const commitHooks = state.commitHooks.length
    try {
      const result = await fn()
      this.sqlite.exec(`RELEASE SAVEPOINT ${name}`)
      return result
    } catch (e) {
      this.sqlite.exec(`ROLLBACK TO SAVEPOINT ${name}`)
      this.sqlite.exec(`RELEASE SAVEPOINT ${name}`)
      state.rollbackHooks.splice(hooks)
      state.commitHooks.splice(commitHooks)
      throw e
    } finally {
      state.depth--
    }
  }

  close(): void {
    this.#cache.clear()
    this.sqlite.close()
  }
}
