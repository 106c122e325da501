import { readMigrationFiles } from 'drizzle-orm/migrator'
import type { PgExecutor } from './pool'
import { PG_MIGRATIONS_FOLDER } from './paths'

const JOURNAL = `CREATE TABLE IF NOT EXISTS __drizzle_migrations (id serial PRIMARY KEY, hash text NOT NULL, created_at bigint)`

/**
 * Applies db/migrations-pg's pending migrations in one transaction, under an advisory lock: two
 * instances starting together take turns, and the second finds nothing left to do. PostgreSQL's
 * DDL is transactional, so a migration that fails leaves nothing half done.
 */
export async function migratePostgres(pg: PgExecutor): Promise<void> {
  const all = readMigrationFiles({ migrationsFolder: PG_MIGRATIONS_FOLDER })
  await pg.transaction(async () => {
    await pg.exec(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`)
    await pg.exec(JOURNAL)
    const applied = new Set(((await pg.objects('SELECT hash FROM __drizzle_migrations', [])) as { hash: string }[]).map((r) => r.hash))
    for (const m of all) {
      if (applied.has(m.hash)) continue
      for (const statement of m.sql) if (statement.trim()) await pg.exec(statement)
      await pg.run('INSERT INTO __drizzle_migrations (hash, created_at) VALUES ($1, $2)', [m.hash, m.folderMillis])
    }
  })
}

/** How many of this build's PostgreSQL migrations the database has not applied. */
export async function pendingPgMigrations(pg: PgExecutor): Promise<number> {
  const all = readMigrationFiles({ migrationsFolder: PG_MIGRATIONS_FOLDER })
  let hashes: Set<string>
  try {
    hashes = new Set(((await pg.objects('SELECT hash FROM __drizzle_migrations', [])) as { hash: string }[]).map((r) => r.hash))
  } catch {
    return all.length
  }
  return all.filter((m) => !hashes.has(m.hash)).length
}

/** The advisory lock key migrations hold ("gpuhq" in ASCII). */
const MIGRATION_LOCK = 0x6770756871
