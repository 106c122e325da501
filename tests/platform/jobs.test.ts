import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { JobRunner, type JobDefinition } from '../../src/platform/jobs'
import type { TestClock } from '../../src/platform/clock'
import { tempDeps, type TempDeps } from './fixtures/temp-deps'

let t: TempDeps
beforeEach(async () => {
  t = await tempDeps()
})
afterEach(() => t.close())

/** A job whose runs wait until the test lets them finish, counting how many started. */
function gatedJob(name = 'test.gated', leaseSeconds?: number) {
  const gate = Promise.withResolvers<void>()
  const state = { started: 0 }
  const job: JobDefinition = {
    name,
    schedule: '0 0 1 1 *',
    leaseSeconds,
    description: 'waits for the test',
    run: async ({ period }) => {
      state.started++
      await gate.promise
      return `ran ${period}`
    },
  }
  return { job, state, release: () => gate.resolve() }
}

const runsOf = async (job: string) =>
  (await t.deps.db.all(sql`SELECT period, holder, outcome, detail, finished_at FROM job_runs WHERE job = ${job} ORDER BY period`)) as {
    period: string
    holder: string
    outcome: string
    detail: string | null
    finished_at: number | null
  }[]
/** The job's lease row, or null (as bun:sqlite answered for no row). */
const leaseOf = async (job: string) => (await t.deps.db.get(sql`SELECT holder, leased_until FROM job_leases WHERE job = ${job}`)) ?? null
/**
 * Resolves once `n` runs of a gated job have started, that is, taken their lease and recorded their
 * period: a run not awaited got that far before the runner's promise came back when the database
 * answered synchronously; now it gets there a few awaits later.
 */
async function startedRuns(state: { started: number }, n: number): Promise<void> {
  const until = Date.now() + 10_000
  while (state.started < n && Date.now() < until) await Bun.sleep(1)
  expect(state.started).toBe(n)
}

describe('JobRunner', () => {
  test('a manual run during a scheduled run of the same job in one process is skipped, not run twice at once', async () => {
    const g = gatedJob()
    const runner = new JobRunner(t.deps, [g.job])
    const first = runner.run(g.job.name, 'scheduled:a')
    const second = await runner.run(g.job.name, 'manual:b')
    expect(second.outcome).toBe('skipped')
    g.release()
    expect((await first).outcome).toBe('succeeded')
    expect(g.state.started).toBe(1)
    expect((await runner.run(g.job.name, 'manual:c')).outcome).toBe('succeeded')
  })

  test('two processes running the same job for the same period: exactly one runs, the other is skipped', async () => {
    const { job, state, release } = gatedJob()
    const a = new JobRunner(t.deps, [job])
    const b = new JobRunner(await t.another(), [job])
    const runs = [a.run(job.name, 'scheduled:2026-11-22T14:00:00.000Z'), b.run(job.name, 'scheduled:2026-11-22T14:00:00.000Z')]
    release()
    const outcomes = await Promise.all(runs)
    expect(outcomes.map((o) => o.outcome).sort()).toEqual(['skipped', 'succeeded'])
    expect(state.started).toBe(1)
    expect(await runsOf(job.name)).toEqual([
      expect.objectContaining({
        period: 'scheduled:2026-11-22T14:00:00.000Z',
        holder: a.holder,
        outcome: 'succeeded',
        detail: 'ran scheduled:2026-11-22T14:00:00.000Z',
      }),
    ])
  })

  test('a period that already ran is skipped later too, by any process, while the next period runs', async () => {
    const { job, state, release } = gatedJob()
    release()
    const a = new JobRunner(t.deps, [job])
    const b = new JobRunner(await t.another(), [job])
    expect((await a.run(job.name, 'p1')).outcome).toBe('succeeded')
    expect((await b.run(job.name, 'p1')).outcome).toBe('skipped')
    expect((await a.run(job.name, 'p1')).outcome).toBe('skipped')
    expect((await b.run(job.name, 'p2')).outcome).toBe('succeeded')
    expect(state.started).toBe(2)
    expect(await leaseOf(job.name)).toBeNull()
  })

  test('a lease held by another live process blocks every period until it is released', async () => {
    const { job, state, release } = gatedJob()
    const a = new JobRunner(t.deps, [job])
    const b = new JobRunner(await t.another(), [job])
    const running = a.run(job.name, 'p1')
    await startedRuns(state, 1)
    expect(await leaseOf(job.name)).toEqual(expect.objectContaining({ holder: a.holder }))
    expect((await b.run(job.name, 'p2')).outcome).toBe('skipped')
    release()
    expect((await running).outcome).toBe('succeeded')
    expect((await b.run(job.name, 'p2')).outcome).toBe('succeeded')
  })

  test('a lease whose holder stopped answering is taken over once it expires', async () => {
    const { job, state, release } = gatedJob('test.stuck', 60)
    const a = new JobRunner(t.deps, [job])
    const otherDeps = await t.another()
    const b = new JobRunner(otherDeps, [job])
    const stuck = a.run(job.name, 'p1') // never finishes until released: a hung or crashed process
    await startedRuns(state, 1)
    otherDeps.testClock!.advance(59)
    expect((await b.run(job.name, 'p2')).outcome).toBe('skipped')
    otherDeps.testClock!.advance(2)
    const taken = b.run(job.name, 'p2')
    await startedRuns(state, 2)
    expect(await leaseOf(job.name)).toEqual(expect.objectContaining({ holder: b.holder }))
    release()
    expect((await taken).outcome).toBe('succeeded')
    expect((await stuck).outcome).toBe('succeeded')
    expect((await runsOf(job.name)).map((r) => [r.period, r.holder, r.outcome])).toEqual([
      ['p1', a.holder, 'succeeded'],
      ['p2', b.holder, 'succeeded'],
    ])
  })

  test('a job that throws is recorded as failed, logged, and releases its lease', async () => {
    const failing: JobDefinition = {
      name: 'test.failing',
      schedule: '0 0 1 1 *',
      description: 'always fails',
      run: () => {
        throw new Error('marketplace unreachable')
      },
    }
    const a = new JobRunner(t.deps, [failing])
    const outcome = await a.run(failing.name, 'p1')
    expect(outcome).toEqual({ job: 'test.failing', period: 'p1', outcome: 'failed', detail: 'marketplace unreachable' })
    const [row] = await runsOf(failing.name)
    expect(row).toEqual(expect.objectContaining({ outcome: 'failed', detail: 'marketplace unreachable' }))
    expect(row!.finished_at).not.toBeNull()
    expect(await leaseOf(failing.name)).toBeNull()
    expect(t.logs.some((l) => l.msg === 'job failed' && l.job === 'test.failing')).toBe(true)
    const b = new JobRunner(await t.another(), [failing])
    expect((await b.run(failing.name, 'p2')).outcome).toBe('failed') // not blocked by a leftover lease
  })

  test('a job that rejects asynchronously is recorded as failed too', async () => {
    const job: JobDefinition = {
      name: 'test.rejects',
      schedule: '0 0 1 1 *',
      description: 'rejects',
      run: async () => {
        await Bun.sleep(1)
        throw new Error('later')
      },
    }
    const outcome = await new JobRunner(t.deps, [job]).run(job.name, 'p1')
    expect(outcome.outcome).toBe('failed')
    expect((await runsOf(job.name))[0]!.outcome).toBe('failed')
    expect(await leaseOf(job.name)).toBeNull()
  })

  test('an unknown job name is a programming error', async () => {
    const runner = new JobRunner(t.deps, [])
    expect(runner.has('nope')).toBe(false)
    await expect(runner.run('nope', 'p1')).rejects.toThrow(/unknown job/)
  })
})

describe('the per-tenant error boundary (issue 34)', () => {
  /** A job over three tenants in order; the ones in `poisoned` throw, each attempt is counted. */
  function walkingJob(poisoned: Set<string>) {
    const attempts: string[] = []
    const job: JobDefinition = {
      name: 'test.walk',
      schedule: '0 0 1 1 *',
      description: 'walks three tenants',
      run: async ({ tenants }) => {
        let done = 0
        for (const tenant of ['t1', 't2', 't3'])
          await tenants.run(tenant, () => {
            attempts.push(tenant)
            if (poisoned.has(tenant)) throw new Error(`bad data of ${tenant}`)
            done++
          })
        return `${done} tenants done`
      },
    }
    return { job, attempts }
  }

  test("one tenant's failure is logged with job, tenant and cause; the others run and the run is recorded partial", async () => {
    const { job, attempts } = walkingJob(new Set(['t1']))
    const outcome = await new JobRunner(t.deps, [job]).run(job.name, 'p1')
    expect(attempts).toEqual(['t1', 't2', 't3'])
    expect(outcome).toEqual({ job: 'test.walk', period: 'p1', outcome: 'partial', detail: '2 tenants done; 1 tenants failed: t1 (bad data of t1)' })
    expect((await runsOf(job.name))[0]).toEqual(expect.objectContaining({ outcome: 'partial', detail: outcome.detail }))
    const logged = t.logs.find((l) => l.msg === 'job failed for a tenant')
    expect(logged).toMatchObject({ job: 'test.walk', tenant: 't1', failures: 1 })
    expect(JSON.stringify(logged)).toContain('bad data of t1')
  })

  test('a tenant that failed is left out for a minute, then two, four… and tried again once it is due; success clears it', async () => {
    const poisoned = new Set(['t2'])
    const { job, attempts } = walkingJob(poisoned)
    const runner = new JobRunner(t.deps, [job])
    const clock = t.deps.clock as TestClock
    expect((await runner.run(job.name, 'p1')).outcome).toBe('partial')
    attempts.length = 0
    // The very next tick does not try it again.
    expect(await runner.run(job.name, 'p2')).toMatchObject({ outcome: 'succeeded', detail: '2 tenants done; 1 tenants waiting out a backoff after failing' })
    expect(attempts).toEqual(['t1', 't3'])
    clock.advance(61)
    attempts.length = 0
    expect((await runner.run(job.name, 'p3')).outcome).toBe('partial')
    expect(attempts).toEqual(['t1', 't2', 't3'])
    // Failed twice: two minutes now.
    clock.advance(61)
    attempts.length = 0
    await runner.run(job.name, 'p4')
    expect(attempts).toEqual(['t1', 't3'])
    clock.advance(60)
    poisoned.clear()
    attempts.length = 0
    expect(await runner.run(job.name, 'p5')).toMatchObject({ outcome: 'succeeded', detail: '3 tenants done' })
    expect(attempts).toEqual(['t1', 't2', 't3'])
  })

  test("a busy database is no tenant's failure: it reaches the runner, which runs the job again", async () => {
    let calls = 0
    const job: JobDefinition = {
      name: 'test.walk-busy',
      schedule: '0 0 1 1 *',
      description: 'meets a busy database once',
      run: async ({ tenants }) => {
        calls++
        await tenants.run('t1', () => {
          if (calls === 1) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })
        })
        return `call ${calls}`
      },
    }
    expect(await new JobRunner(t.deps, [job]).run(job.name, 'p1')).toMatchObject({ outcome: 'succeeded', detail: 'call 2' })
  })
})
