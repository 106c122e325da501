/**
 * A second process for the exactly-once tests: opens the database named by the environment (as
 * the service does, with the test clock's persisted offset) and runs the hourly charge run itself,
 * without the job runner's lease, so overlapping processes meet only in the database.
 *
 *   bun run tests/support/billing-worker.ts [start-at-epoch-ms]
 *
 * Waits until the given wall-clock instant (so several workers start together), prints the run's
 * summary and exits 0.
 */
import { loadConfig } from '../../src/config'
import { DEFAULT_BUSY_TIMEOUT_MS } from '../../db/client'
import { buildDeps } from '../../src/deps'
import { runHourlyCharges } from '../../src/modules/billing'
import { createLogger } from '../../src/platform/logger'

const startAt = Number(process.argv[2] ?? 0)
const deps = await buildDeps(loadConfig(), {
  log: createLogger(
    'error',
    () => new Date().toISOString(),
    (l) => console.error(l),
  ),
  busyTimeoutMs: DEFAULT_BUSY_TIMEOUT_MS,
})
while (Date.now() < startAt) Bun.sleepSync(1)
console.log(await runHourlyCharges(deps))
await deps.database.close()
