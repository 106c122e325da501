/**
 * Shared by the benchmarks: the service's dependencies for fixtures, a pro-plan account, a free
 * loopback port, waiting for a service to answer, a PostgreSQL database.
 */
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../src/config'
import { buildDeps } from '../src/deps'
import { createAccount } from '../src/modules/accounts/admin.service'
import type { Deps } from '../src/platform/context'
import { createLogger } from '../src/platform/logger'

/**
 * The service's dependencies on the database `env` names, for writing a benchmark's fixtures or
 * running a module's code in-process; warnings go to standard error when `warnings`, else nowhere.
 */
export async function benchDeps(env: Record<string, string>, { warnings = false } = {}): Promise<Deps> {
  return await buildDeps(loadConfig(env), {
    log: createLogger('warn', () => new Date().toISOString(), warnings ? (line) => console.error(line) : () => {}),
  })
}

/** A tenant on pro (no server limit) and its owner's password-reset ticket (the first sign-in sets a password). */
export async function proAccount(deps: Deps, email = 'bench@example.test', tenantName = 'Bench rigs'): Promise<{ tenantId: string; ticket: string }> {
  const { tenantId, ticket } = await createAccount({ deps, input: { email, tenantName } })
  await deps.db.run(sql`UPDATE tenants SET plan_code = 'pro' WHERE id = ${tenantId}`)
  return { tenantId, ticket }
}

/** A loopback port nothing listens on right now. */
export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

/** Resolves once `url` answers 2xx; gives up after 15 s. */
export async function waitFor(url: string): Promise<void> {
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url, { signal: AbortSignal.timeout(1000) })).ok) return
    } catch {
      // not up yet
    }
    await Bun.sleep(50)
  }
  throw new Error(`${url} did not answer within 15 s`)
}

/**
 * A fresh PostgreSQL database for a benchmark: on the cluster BENCH_PG_URL names (its maintenance
 * database), else on a throwaway cluster started with scripts/lib.sh. `stop` drops the database and
 * stops the cluster it started.
 */
export async function benchPostgres(): Promise<{ url: string; stop: () => Promise<void> }> {
  const root = join(import.meta.dir, '..')
  let admin = process.env.BENCH_PG_URL
  let stopCluster = () => {}
  if (!admin) {
    const out = Bun.spawnSync(['bash', '-c', 'source scripts/lib.sh >/dev/null && start_test_postgres >&2 && echo "$GPUHQ_TEST_PG_URL $PG_TEST_DIR $PG_BIN"'], {
      cwd: root,
      stderr: 'inherit',
    })
    const [url, dir, bin] = out.stdout.toString().trim().split(' ')
    if (!url || !dir || !bin) throw new Error('could not start PostgreSQL (set BENCH_PG_URL)')
    admin = url
    stopCluster = () => {
      Bun.spawnSync(['bash', '-c', `source scripts/lib.sh >/dev/null && PG_TEST_DIR=${dir} PG_BIN=${bin} stop_test_postgres`], { cwd: root })
    }
  }
  const name = `gpuhq_bench_${process.pid}_${Date.now().toString(36)}`
  const maintenance = new Bun.SQL(admin, { max: 1 })
  await maintenance.unsafe(`CREATE DATABASE ${name}`)
  await maintenance.close()
  const u = new URL(admin)
  u.pathname = `/${name}`
  return {
    url: u.toString(),
    stop: async () => {
      const a = new Bun.SQL(admin, { max: 1 })
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {})
      await a.close()
      stopCluster()
    },
  }
}
