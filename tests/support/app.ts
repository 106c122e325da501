import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { buildDeps } from '../../src/deps'
import { createApp } from '../../src/app'
import { startServer } from '../../src/server'
import { JobRunner } from '../../src/platform/jobs'
import { createLogger } from '../../src/platform/logger'
import type { Deps } from '../../src/platform/context'
import { jobs } from '../../jobs'
import { fleetRuntime } from '../../src/modules/fleet'
import { freshPostgresDatabase, onPostgres } from './postgres'

export const TEST_PUBLIC_URL = 'http://gpuhq.test'
export const TEST_SECRET_KEY = 'a'.repeat(64)

export type TestApp = {
  url: string
  deps: Deps
  runner: JobRunner
  dir: string
  /** DATABASE_URL of the app's database (a file: URL, or with GPUHQ_TEST_DATABASE=postgres its own PostgreSQL database). */
  databaseUrl: string
  /** Every log line the app wrote, parsed. */
  logs: Record<string, unknown>[]
  rawLogs: string[]
  fetch: (path: string, init?: RequestInit & { json?: unknown }) => Promise<Response>
  close: () => Promise<void>
}

/**
 * The real app on a fresh, migrated SQLite file in a temp dir, listening on a random loopback port.
 * Nothing is mocked; only the outside world (mail, payment providers, marketplaces) gets fakes.
 * `opts.port` listens on a chosen port instead (freePort()), for a test whose PUBLIC_URL must reach it.
 */
export async function startTestApp(env: Record<string, string> = {}, opts: { port?: number } = {}): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'gpuhq-test-'))
  const pg = onPostgres && !env.DATABASE_URL ? await freshPostgresDatabase() : null
  const databaseUrl = pg?.url ?? `file:${join(dir, 'gpuhq.db')}`
  const config = loadConfig({
    NODE_ENV: 'test',
    PUBLIC_URL: TEST_PUBLIC_URL,
    DATA_DIR: dir,
    DATABASE_URL: databaseUrl,
    SECRET_KEY: TEST_SECRET_KEY,
    TEST_CLOCK: 'true',
    JOBS_ENABLED: 'false',
    // No agent executable is served (so none is offered as an update) unless a test builds one (tests/agent/agent-binary.ts).
    AGENT_BIN_DIR: join(dir, 'agent-bin'),
    // The sandbox runs only where PAYMENT_PROVIDERS names it (docs/configuration.md); the test setup does.
    PAYMENT_PROVIDERS: 'sandbox',
    // No test reaches a real marketplace: without a simulator the platforms are a closed local port.
    MARKETPLACE_A_API_URL: 'http://127.0.0.1:9',
    MARKETPLACE_B_API_URL: 'http://127.0.0.1:9',
    // The platforms' published spacing (1 to 3 s between calls), scaled down for the simulators
    // (production paces at 100 and refuses anything else).
    ...(env.NODE_ENV === 'production' ? {} : { MARKETPLACE_PACE_PERCENT: '1' }),
    ...env,
  })
  const rawLogs: string[] = []
  const logs: Record<string, unknown>[] = []
  const deps = await buildDeps(config, {
    log: createLogger(
      'debug',
      () => new Date().toISOString(),
      (line) => {
        rawLogs.push(line)
        logs.push(JSON.parse(line))
        // GPUHQ_TEST_LOG_ERRORS=1: the app's error lines on stderr, to see why a request failed.
        if (process.env.GPUHQ_TEST_LOG_ERRORS === '1' && logs.at(-1)!.level === 'error') console.error(line)
      },
    ),
  })
  const runner = new JobRunner(deps, jobs)
  const app = createApp(deps, runner)
  const running = startServer(app, deps, { port: opts.port ?? 0, hostname: '127.0.0.1' })
  const url = running.url
  return {
    url,
    deps,
    runner,
    dir,
    databaseUrl: env.DATABASE_URL ?? databaseUrl,
    logs,
    rawLogs,
    fetch: (path, init = {}) => {
      const { json, ...rest } = init
      const headers = new Headers(rest.headers)
      if (json !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json')
      return fetch(url + path, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body })
    },
    close: async () => {
      await running.stop()
      await runner.stop()
      await fleetRuntime(deps).stop()
      // The test clock's last move is still being stored (TestClock.saved).
      await deps.testClock?.saved
      deps.durable.stop()
      await deps.database.close()
      await pg?.drop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A loopback port free right now (for a test app whose PUBLIC_URL must name its own address). */
export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(null) })
  const port = probe.port!
  probe.stop(true)
  return port
}

/**
 * The environment of a separate process (tests/support/jobs-worker.ts) on this test app's database,
 * configured as startTestApp configures the app, plus `extra` (fakes' URLs and keys).
 */
export function workerEnv(app: TestApp, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'test',
    PUBLIC_URL: TEST_PUBLIC_URL,
    DATA_DIR: app.dir,
    DATABASE_URL: app.databaseUrl,
    SECRET_KEY: TEST_SECRET_KEY,
    TEST_CLOCK: 'true',
    JOBS_ENABLED: 'false',
    LOG_LEVEL: 'error',
    ...extra,
  }
}

/**
 * Moves an app's test clock (which starts at the real time) to 01:00 UTC of the next day unless it
 * is already before 06:00 UTC: a test that moves through hours and reads "today's" figures then
 * never crosses midnight by chance, whatever the time it runs. The clock only moves on.
 */
export async function startEarlyInUtcDay(app: TestApp): Promise<void> {
  const dayUs = 86_400_000_000
  const now = app.deps.clock.nowUs()
  const dayStart = Math.floor(now / dayUs) * dayUs
  if (now - dayStart > 6 * 3_600_000_000) app.deps.testClock!.advance((dayStart + dayUs + 3_600_000_000 - now) / 1_000_000)
  await app.deps.testClock!.saved
}
