import { databaseFileVanished, pendingMigrations } from '../../../db/client'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { MIGRATIONS_FOLDER } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { problems } from '../../platform/problem'

/** Ready means the database answers and every migration of this build is applied. */
export function checkReadiness({ deps }: { deps: Deps }) {
  let pending: number
  if (databaseFileVanished(deps.sqlite)) {
    deps.log.error('readiness check failed: the database file is gone or was replaced', { database: deps.config.databasePath })
    throw problems.unavailable('the database file is gone or was replaced; restart the service', 5)
  }
  try {
    deps.sqlite.query('SELECT 1').get()
    pending = pendingMigrations({ sqlite: deps.sqlite, db: deps.db, path: deps.config.databasePath })
  } catch (e) {
    deps.log.error('readiness check failed', { error: e })
    throw problems.unavailable('the database is not reachable', 5)
  }
  if (pending > 0) throw problems.unavailable(`${pending} database migrations are not applied yet`, 5)
  const total = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).length
  return { status: 'ready' as const, migrations: { applied: total, pending: 0 } }
}
