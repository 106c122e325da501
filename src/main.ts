import { chmodSync, existsSync, statSync } from 'node:fs'
import { ConfigError, loadConfig, type Config } from './config'
import { buildDeps } from './deps'
import { createApp } from './app'
import { startServer } from './server'
import { JobRunner } from './platform/jobs'
import { jobs } from '../jobs'
import { fleetRuntime } from './modules/fleet'
import { consoleBundle } from './modules/console'

/** Composition root: config → database → app → jobs → listen; SIGTERM drains and closes. */
let config: Config
try {
  config = loadConfig()
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(`gpuhq: invalid configuration: ${e.message}`)
    process.exit(2)
  }
  throw e
}

// The data directory holds the database and the secret key: private to the service's user.
try {
  if (existsSync(config.dataDir) && (statSync(config.dataDir).mode & 0o077) !== 0) chmodSync(config.dataDir, 0o700)
} catch (e) {
  console.error(`gpuhq: could not make ${config.dataDir} private (0700): ${(e as Error).message}`)
}

const deps = buildDeps(config)
const runner = new JobRunner(deps, jobs)
const app = createApp(deps, runner)
let running: ReturnType<typeof startServer>
try {
  running = startServer(app, deps, { port: config.port })
} catch (e) {
  const code = (e as { code?: string }).code
  if (code === 'EADDRINUSE' || code === 'EACCES') {
    console.error(
      `gpuhq: cannot listen on port ${config.port}: ${code === 'EADDRINUSE' ? 'it is in use by another program (or another gpuhq)' : 'permission denied'}; set PORT to another port`,
    )
    process.exit(1)
  }
  throw e
}
if (config.jobsEnabled) runner.start()

// The web console is bundled in memory now, not at its first visit; a failed build leaves the API
// running and says why here (the page answers 503 meanwhile).
consoleBundle().then(
  (bundle) => deps.log.info('web console built', { files: [...bundle.assets.keys()] }),
  (error) => deps.log.error('the web console did not build', { error }),
)
deps.log.info('listening', {
  port: running.server.port,
  public_url: config.publicUrl,
  console: `${config.publicUrl}/`,
  api_docs: `${config.publicUrl}/api/v1/docs`,
  openapi: `${config.publicUrl}/api/v1/openapi.json`,
  database: config.databasePath,
  test_clock: config.testClock,
})
if (process.stdout.isTTY || process.env.GPUHQ_BANNER === '1')
  console.error(`gpuhq listening on ${config.publicUrl} — console: ${config.publicUrl}/ — API docs: ${config.publicUrl}/api/v1/docs`)

let stopping = false
async function shutdown(signal: string) {
  if (stopping) return
  stopping = true
  deps.log.info('shutting down', { signal })
  await running.stop() // waits for in-flight requests
  await runner.stop()
  fleetRuntime(deps).stop() // writes buffered heartbeats and telemetry
  await deps.durable.barrier().catch((error) => deps.log.error('could not make the last writes durable', { error }))
  deps.durable.stop()
  deps.sqlite.close()
  deps.log.info('stopped', { signal })
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))
