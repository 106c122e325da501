/**
 * The PostgreSQL side of db/pg/database.ts: a worker thread that holds one connection (Bun's
 * built-in SQL client) and runs the statements the main thread sends, one at a time, in order. The
 * main thread blocks on `Atomics.wait` until the reply's id is stored in the shared flag, then
 * takes the reply off its port with `receiveMessageOnPort`: the service's data layer stays
 * synchronous (db/client.ts), exactly as with bun:sqlite.
 *
 * Values come back as bun:sqlite gives them: 64-bit integers as numbers (they are microseconds
 * and micro-USD, well inside 2^53), booleans as 1 and 0, bytea as bytes.
 */
import { type MessagePort, workerData } from 'node:worker_threads'
import type { PgReply, PgRequest, PgSettings } from './protocol'

type Reserved = Awaited<ReturnType<InstanceType<typeof Bun.SQL>['reserve']>>

const { port, flag: sab, url, settings } = workerData as { port: MessagePort; flag: SharedArrayBuffer; url: string; settings: PgSettings }
const flag = new Int32Array(sab)
let pool: InstanceType<typeof Bun.SQL> | null = null
let conn: Reserved | null = null

/** Connects (again, after a lost connection) and sets what every statement of the service relies on. */
async function connection(): Promise<Reserved> {
  if (conn) return conn
  pool ??= new Bun.SQL(url, { max: 1, bigint: true, idleTimeout: 0, connectionTimeout: Math.ceil(settings.connectTimeoutMs / 1000) })
  const c = await pool.reserve()
  try {
    // gpuhq_compat first, pg_catalog after it: SQLite's functions the statements use (db/pg/compat.ts).
    await c.unsafe(
      `SET search_path = public, gpuhq_compat, pg_catalog; SET lock_timeout = ${settings.lockTimeoutMs}; SET statement_timeout = ${settings.statementTimeoutMs}; SET idle_in_transaction_session_timeout = ${settings.statementTimeoutMs * 2}`,
    )
  } catch (e) {
    c.release()
    throw e
  }
  conn = c
  return c
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

/** SQLSTATE classes after which the connection is not to be trusted: it is dropped and made anew. */
const LOST = /^(08|57P0[1-3]|53300)/

async function handle(m: PgRequest): Promise<PgReply> {
  if (m.kind === 'close') {
    try {
      conn?.release()
      await pool?.close({ timeout: 1 })
    } catch {
      // Closing a broken connection: nothing left to do.
    }
    conn = null
    pool = null
    return { id: m.id, rows: [], changes: 0 }
  }
  try {
    const c = await connection()
    if (m.kind === 'open') return { id: m.id, rows: [], changes: 0 }
    if (m.kind === 'exec') {
      await c.unsafe(m.sql)
      return { id: m.id, rows: [], changes: 0 }
    }
    const q = m as unknown as { sql: string; params: unknown[] }
    const params = q.params.map(toDriver)
    if (m.kind === 'values') {
      const result = await c.unsafe(q.sql, params).values()
      return { id: m.id, rows: (result as unknown[][]).map(rowValues), changes: result.count ?? 0 }
    }
    const result = await c.unsafe(q.sql, params)
    return { id: m.id, rows: m.kind === 'objects' ? (result as Record<string, unknown>[]).map(rowObject) : [], changes: result.count ?? 0 }
  } catch (e) {
    const err = e as { message?: string; errno?: string; code?: string; constraint?: string; detail?: string; table?: string; column?: string }
    const sqlState = typeof err.errno === 'string' && /^[0-9A-Z]{5}$/.test(err.errno) ? err.errno : connectionState(err.code)
    if (LOST.test(sqlState)) {
      try {
        conn?.release()
      } catch {
        // already gone
      }
      conn = null
    }
    return { id: m.id, error: { message: sqliteMessage(sqlState, err) ?? err.message ?? String(e), sqlState, constraint: err.constraint ?? null } }
  }
}

/**
 * A lock wait past lock_timeout, or a constraint violation, worded as SQLite words it ("UNIQUE constraint failed: t.a, t.b"), which
 * is what callers and operators of this service already know, with PostgreSQL's constraint name.
 * The key's values (PostgreSQL's detail) are left out: they may be hashes or personal data.
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

// One at a time, in arrival order: a transaction's statements must never interleave with others.
let chain: Promise<void> = Promise.resolve()
port.on('message', (m: PgRequest) => {
  chain = chain.then(async () => {
    const reply = await handle(m)
    port.postMessage(reply)
    Atomics.store(flag, 0, m.id)
    Atomics.notify(flag, 0)
  })
})
