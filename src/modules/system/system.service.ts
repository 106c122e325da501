import type { Deps } from '../../platform/context'
import { PROBLEM_CODES, type ProblemCode } from '../../platform/problem'
import { problemPage } from './problems.page'
import { SystemErrors } from './system.errors'
import { databaseVanished, migrationCount, pendingMigrationCount } from './system.repository'

/** Ready means the database answers and every migration of this build is applied. */
export async function checkReadiness({ deps }: { deps: Deps }) {
  let pending: number
  if (databaseVanished(deps)) {
    deps.log.error('readiness check failed: the database file is gone or was replaced', { database: deps.config.databasePath })
    throw SystemErrors.databaseGone()
  }
  try {
    pending = await pendingMigrationCount(deps)
  } catch (e) {
    deps.log.error('readiness check failed', { error: e })
    throw SystemErrors.databaseUnreachable(e)
  }
  if (pending > 0) throw SystemErrors.migrationsPending(pending)
  return { status: 'ready' as const, migrations: { applied: migrationCount(), pending: 0 } }
}

/** The human page of one problem type, for the `type` URI of every problem document. */
export function problemTypePage({ deps, code }: { deps: Deps; code: string }): string {
  if (!Object.hasOwn(PROBLEM_CODES, code)) throw SystemErrors.problemTypeNotFound(code)
  return problemPage(code as ProblemCode, deps.config.publicUrl)
}
