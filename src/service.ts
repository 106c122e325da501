import type { Config } from './config'
import { buildDeps, serviceBusyTimeout } from './deps'
import { DEFAULT_BUSY_TIMEOUT_MS, setBusyTimeout } from '../db/client'
import { createApp } from './app'
import { startServer } from './server'
import { JobRunner } from './platform/jobs'
import type { Deps } from './platform/context'
import { jobs } from '../jobs'
import { fleetRuntime } from './modules/fleet'
import { consoleBundle } from './modules/console'
import { savePublicUrl } from './modules/testing'

/**
 * The service as one process runs it: config → database → app → listen, and a stop that drains in
 * the right order. src/main.ts runs it as it is; the demo (scripts/demo.ts) seeds it before starting
 * the jobs. The caller starts the jobs (`runner.start()`) when it wants them.
 */
export type Service = {
  deps: Deps
  runner: JobRunner
  /** The loopback address this process answers on (PUBLIC_URL may name a proxy in front of it). */
  url: string
  port: number
  /** Drains in-flight requests, stops the jobs, writes what waits and closes the database. */
  stop: () => Promise<void>
}

export async function startService(config: Config): Promise<Service> {
  const deps = await buildDeps(config)
  // Where it answers, for operator commands run in another shell with another environment. Written
  // before listening, with an operator tool's patience for the write lock: a second process starting
  // beside this one holds it for its own start-up writes, longer than a request's short wait (two
  // processes started at once on a loaded machine: one exited with SQLITE_BUSY here).
  setBusyTimeout(deps.database, DEFAULT_BUSY_TIMEOUT_MS)
  try {
    await savePublicUrl(deps.db, config.publicUrl, deps.clock.nowUs())
  } finally {
    setBusyTimeout(deps.database, serviceBusyTimeout(deps.database))
  }
  const runner = new JobRunner(deps, jobs)
  const app = createApp(deps, runner)
  const running = startServer(app, deps, { port: config.port })
  // The web console is bundled in memory now, not at its first visit; a failed build leaves the API
  // running and says why here (the page answers 503 meanwhile).
  consoleBundle().then(
    (bundle) => deps.log.info('web console built', { files: [...bundle.assets.keys()] }),
    (error) => deps.log.error('the web console did not build', { error }),
  )
  return {
    deps,
    runner,
    url: running.url,
    port: running.server.port as number,
    stop: async () => {
      await running.stop() // waits for in-flight requests
      await runner.stop()
      await fleetRuntime(deps).stop() // writes buffered heartbeats and telemetry
      await deps.durable.barrier().catch((error) => deps.log.error('could not make the last writes durable', { error }))
      deps.durable.stop()
      await deps.database.close()
    },
  }
}

/** The one line for a port the service cannot listen on, or null when the failure is something else. */
export function listenFailure(error: unknown, port: number): string | null {
  const code = (error as { code?: string }).code
  if (code !== 'EADDRINUSE' && code !== 'EACCES') return null
  return `gpuhq: cannot listen on port ${port}: ${code === 'EADDRINUSE' ? 'it is in use by another program (or another gpuhq)' : 'permission denied'}; set PORT to another port`
}

/**
 * The one start-up line for a PUBLIC_URL browsers cannot sign in at: the session cookie is
 * `Secure` (`__Host-gpuhq_session`), which a browser keeps over plain http only on localhost; null
 * for https and for loopback hosts.
 */
export function plainHttpWarning(publicUrl: string): string | null {
  const url = new URL(publicUrl)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const loopback = host === 'localhost' || host.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(host) || host === '::1'
  if (url.protocol !== 'http:' || loopback) return null
  return `browser sign-in needs HTTPS (or localhost): PUBLIC_URL is ${url.origin}, and browsers drop the Secure session cookie over plain http on any host but localhost; put a TLS reverse proxy in front and set PUBLIC_URL to its https:// address (docs/operations.md "HTTPS")`
}
