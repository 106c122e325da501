/**
 * Prints the OpenAPI document the service serves at GET /api/v1/openapi.json, built from the app
 * itself without listening: a throwaway in-memory database, the test clock on (so its routes are
 * linted too), every other setting at its default. `scripts/check` lints what this prints with
 * Redocly and Spectral (docs/development.md "Checks"). `bun run scripts/openapi.ts > openapi.json`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../src/app'
import { loadConfig } from '../src/config'
import { buildDeps } from '../src/deps'
import { JobRunner } from '../src/platform/jobs'
import { createLogger } from '../src/platform/logger'
import { jobs } from '../jobs'

const dir = mkdtempSync(join(tmpdir(), 'gpuhq-openapi-'))
try {
  const config = loadConfig({
    NODE_ENV: 'development',
    PUBLIC_URL: 'https://gpuhq.test',
    DATA_DIR: dir,
    DATABASE_URL: 'file::memory:',
    SECRET_KEY: 'a'.repeat(64),
    TEST_CLOCK: 'true',
    JOBS_ENABLED: 'false',
    PAYMENT_PROVIDERS: 'sandbox',
  })
  const deps = await buildDeps(config, {
    log: createLogger(
      'silent',
      () => '',
      () => {},
    ),
  })
  const app = createApp(deps, new JobRunner(deps, jobs))
  const res = await app.handle(new Request(`${config.publicUrl}/api/v1/openapi.json`))
  if (res.status !== 200) throw new Error(`GET /api/v1/openapi.json answered ${res.status}: ${await res.text()}`)
  process.stdout.write(`${JSON.stringify(await res.json(), null, 2)}\n`)
  deps.durable.stop()
  await deps.database.close()
} finally {
  rmSync(dir, { recursive: true, force: true })
}
