import { readMigrationFiles } from 'drizzle-orm/migrator'
import { databaseFileVanished, MIGRATIONS_FOLDER, pendingMigrations } from '../../../db/client'
import type { Deps } from '../../platform/context'

/** The database file is gone or was replaced under the running process. */
export function databaseVanished(deps: Deps): boolean {
  return databaseFileVanished(deps.sqlite)
}

/** Asks the database something (it throws when unreachable) and counts the migrations not yet applied. */
export function pendingMigrationCount(deps: Deps): number {
  deps.sqlite.query('SELECT 1').get()
  return pendingMigrations({ sqlite: deps.sqlite, db: deps.db, path: deps.config.databasePath })
}

/** How many migrations this build carries. */
export function migrationCount(): number {
  return readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).length
}
