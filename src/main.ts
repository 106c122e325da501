import { chmodSync, existsSync, statSync } from 'node:fs'
import { ConfigError, loadConfig, type Config } from './config'
import { listenFailure, plainHttpWarning, type Service, startService } from './service'

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

let service: Service
try {
  service = await startService(config)
} catch (e) {
  const line = listenFailure(e, config.port)
  if (line) {
    console.error(line)
    process.exit(1)
  }
  // PostgreSQL unreachable or refusing us (db/pg/pool.ts): one line naming the variable, no stack.
  if ((e as Error).name === 'PostgresError') {
    console.error(`gpuhq: DATABASE_URL: cannot use the database at ${config.databasePath}: ${(e as Error).message}`)
    process.exit(1)
  }
  throw e
}
const { deps, runner } = service
if (config.jobsEnabled) runner.start()

deps.log.info('listening', {
  port: service.port,
  public_url: config.publicUrl,
  console: `${config.publicUrl}/`,
  api_docs: `${config.publicUrl}/api/v1/docs`,
  openapi: `${config.publicUrl}/api/v1/openapi.json`,
  database: config.databasePath,
  test_clock: config.testClock,
})
const httpOnly = plainHttpWarning(config.publicUrl)
if (httpOnly) deps.log.warn(httpOnly, { public_url: config.publicUrl })
if (process.stdout.isTTY || process.env.GPUHQ_BANNER === '1')
  console.error(`gpuhq listening on ${config.publicUrl} — console: ${config.publicUrl}/ — API docs: ${config.publicUrl}/api/v1/docs`)

let stopping = false
async function shutdown(signal: string) {
  if (stopping) return
  stopping = true
  deps.log.info('shutting down', { signal })
  await service.stop()
  deps.log.info('stopped', { signal })
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))
