import { sql } from 'drizzle-orm'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { databaseFileVanished, MIGRATIONS_FOLDER, pendingMigrations } from '../../../db/client'
import type { Deps } from '../../platform/context'

/** The database file is gone or was replaced under the running process (SQLite only: PostgreSQL has no file here). */
export function databaseVanished(deps: Deps): boolean {
  return deps.database.sqlite !== null && databaseFileVanished(deps.database.sqlite)
}

/** Asks the database something (it throws when unreachable) and counts the migrations not yet applied. */
export async function pendingMigrationCount(deps: Deps): Promise<number> {
  await deps.db.get(sql`SELECT 1`)
  return await pendingMigrations(deps.database)
}

/** How many migrations this build carries. */
export function migrationCount(): number {
  return readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).length
}
