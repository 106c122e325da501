/**
 * A jobs-only process: opens the database named by the environment the way the service does
 * (buildDeps, the composition root), never builds the HTTP app, runs one scheduled job through the
 * job runner and prints its outcome as JSON. Whatever happens here must happen as in a process
 * that also serves HTTP.
 *
 *   bun run tests/support/jobs-worker.ts <job name>
 */
import { loadConfig } from '../../src/config'
import { buildDeps } from '../../src/deps'
import { JobRunner } from '../../src/platform/jobs'
import { createLogger } from '../../src/platform/logger'
import { jobs } from '../../jobs'

const name = process.argv[2]
if (!name) throw new Error('usage: jobs-worker.ts <job name>')
const deps = await buildDeps(loadConfig(), {
  log: createLogger(
    'error',
    () => new Date().toISOString(),
    (l) => console.error(l),
  ),
})
const runner = new JobRunner(deps, jobs)
const outcome = await runner.run(name, `worker:${deps.newId()}`)
console.log(JSON.stringify(outcome))
await deps.database.close()
