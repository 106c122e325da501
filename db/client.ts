import { Database } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import type { SQLiteTransaction } from 'drizzle-orm/sqlite-core'
import type { ExtractTablesWithRelations } from 'drizzle-orm'
import * as schema from './schema'

export type Schema = typeof schema
export type Db = BunSQLiteDatabase<Schema>
export type Tx = SQLiteTransaction<'sync', void, Schema, ExtractTablesWithRelations<Schema>>
/** Either the database or an open transaction: repositories take this and never care which. */
export type DbOrTx = Db | Tx

export const MIGRATIONS_FOLDER = resolve(import.meta.dir, 'migrations')

export type Database_ = { sqlite: Database; db: Db; path: string }

/**
 * Opens the SQLite file with the pragmas every connection needs: WAL so readers never block the
 * writer, synchronous=FULL so a committed write survives power loss as well as a process crash
 * (reliability-security.md §6.3), foreign keys on, and a busy timeout so a second process waits
 * for the write lock instead of failing.
 */
export function openDatabase(path: string): Database_ {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const sqlite = new Database(path, { create: true, readwrite: true, strict: true })
  sqlite.exec('PRAGMA busy_timeout = 10000')
  sqlite.exec('PRAGMA journal_mode = WAL')
  sqlite.exec('PRAGMA synchronous = FULL')
  sqlite.exec('PRAGMA foreign_keys = ON')
  const db = drizzle({ client: sqlite, schema })
  return { sqlite, db, path }
}

/**
 * Applies pending migrations. Two processes starting together may both see the same migration
 * pending; the loser's statements fail against the winner's tables, so it simply re-reads the
 * journal and finds nothing left to do.
 */
export function migrateDatabase(database: Database_): void {
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
 * Called inside every top-level write transaction before its callback, in that transaction. The
 * idempotency layer uses it to mark a claimed key "executed" atomically with the request's first
 * write (src/platform/idempotency.ts), so a crash after that commit can never run the request twice.
 */
let onTopLevelTransaction: ((tx: Tx) => void) | null = null
export function setTopLevelTransactionHook(hook: ((tx: Tx) => void) | null): void {
  onTopLevelTransaction = hook
}

/**
 * Rows a write changed. bun:sqlite's run() reports it, but Drizzle's bun-sqlite types say void.
 */
export function changesOf(result: unknown): number {
  return (result as { changes: number }).changes
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
    if (!isTransaction(db) && onTopLevelTransaction) onTopLevelTransaction(tx)
    const result = fn(tx)
    if (result instanceof Promise) throw new Error('withTransaction callbacks must be synchronous')
    return result
  }
  if (isTransaction(db)) return db.transaction(guarded) as T
  return db.transaction(guarded as never, { behavior: 'immediate' }) as T
}
