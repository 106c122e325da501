import { Cron } from 'croner'
import { and, eq, lt, or } from 'drizzle-orm'
import { jobLeases, jobRuns } from '../../db/schema/platform'
import { changesOf, isDatabaseBusy, retryWhileBusy, withTransaction } from '../../db/client'
import type { Deps } from './context'
import { formatTimestamp } from './time'

/**
 * Named jobs on croner, each run under a lease in the database so two processes never run the
 * same job at once, and each scheduled period claimed once (job_runs) so no period runs twice.
 * A job must itself be idempotent per period: running it again for the same period changes nothing.
 */
type JobContext = {
  deps: Deps
  period: string
  nowUs: number
  /** The per-tenant error boundary: a job that walks tenants runs each tenant's part in `tenants.run`. */
  tenants: TenantWalk
}
export type JobDefinition = {
  name: string
  /** Cron pattern (croner syntax, UTC; six fields allowed for seconds). */
  schedule: string
  /** How long one run may hold the lease before another process may take over. */
  leaseSeconds?: number
  description: string
  /** Returns a short detail for the job-run record, or nothing. */
  run: (ctx: JobContext) => Promise<string | undefined> | string | undefined
}

export type JobOutcome = { job: string; period: string; outcome: 'succeeded' | 'partial' | 'failed' | 'skipped'; detail: string | null }

/** One tenant's part of a run that failed while the run went on with the others. */
export type TenantFailure = { tenantId: string; cause: string }

/** A tenant whose part failed waits this long before the job tries it again, doubling up to an hour. */
const BACKOFF_FIRST_US = 60_000_000
const BACKOFF_MAX_US = 3_600_000_000
type Backoff = { failures: number; retryAtUs: number }

/**
 * The error boundary of a job that walks tenants (docs/operations.md "Jobs"): each tenant's part
 * runs in `run`, so one tenant's bad data fails that tenant only. The failure is logged with the
 * job, the tenant and the cause, the run goes on, and it is recorded `partial` with the tenants
 * that failed. A tenant that failed is left out of this job's runs for a minute, then two, four…
 * (at most an hour) until its part succeeds again, so it is never retried in a tight loop. The
 * backoff lives in the process that runs the job (a restart forgets it). A busy database is not a
 * tenant's failure: it goes up to the runner, which runs the job again.
 */
export class TenantWalk {
  readonly failures: TenantFailure[] = []
  /** Tenants left out of this run because they are waiting out a backoff. */
  deferred = 0

  constructor(
    private readonly deps: Deps,
    readonly job: string,
    private readonly backoff: Map<string, Backoff> = new Map(),
    /** The run's period, for the log. */
    private readonly period?: string,
  ) {}

  /**
   * Runs one tenant's part; answers its result, or undefined when it failed or is waiting out a
   * backoff. `scope` keeps apart the parts of one tenant that fail on their own (a marketplace account).
   */
  async run<T>(tenantId: string, part: () => T | Promise<T>, scope?: string): Promise<T | undefined> {
    const key = this.#keyOf(tenantId, scope)
    if (this.#waiting(key)) return undefined
    try {
      const result = await part()
      this.backoff.delete(key)
      return result
    } catch (e) {
      this.#failed(key, tenantId, scope, e)
      return undefined
    }
  }

  /**
   * Whether the tenant's part (`scope`) is waiting out a backoff, without counting it as deferred:
   * for a job that checks before it runs a batch optimistically (the caller adds to `deferred`).
   */
  isWaiting(tenantId: string, scope?: string): boolean {
    const waiting = this.backoff.get(this.#keyOf(tenantId, scope))
    return waiting !== undefined && waiting.retryAtUs > this.deps.clock.nowUs()
  }

  #keyOf(tenantId: string, scope: string | undefined): string {
    return `${this.job}|${tenantId}|${scope ?? ''}`
  }

  #waiting(key: string): boolean {
    const waiting = this.backoff.get(key)
    if (!waiting || waiting.retryAtUs <= this.deps.clock.nowUs()) return false
    this.deferred++
    return true
  }

  #failed(key: string, tenantId: string, scope: string | undefined, e: unknown): void {
    if (isDatabaseBusy(e)) throw e
    const cause = `${scope ? `${scope}: ` : ''}${e instanceof Error ? e.message : String(e)}`
    const failures = (this.backoff.get(key)?.failures ?? 0) + 1
    const retryAtUs = this.deps.clock.nowUs() + Math.min(BACKOFF_FIRST_US * 2 ** (failures - 1), BACKOFF_MAX_US)
    this.backoff.set(key, { failures, retryAtUs })
    this.failures.push({ tenantId, cause })
    this.deps.log.error('job failed for a tenant', {
      job: this.job,
      period: this.period,
      tenant: tenantId,
      scope,
      error: e,
      failures,
      retry_at: formatTimestamp(retryAtUs),
    })
  }

  /** What the run's record adds to the job's own detail: the tenants that failed and why, and those deferred. */
  summary(): string | null {
    const parts: string[] = []
    if (this.failures.length) {
      const shown = this.failures.slice(0, 5).map((f) => `${f.tenantId} (${f.cause.slice(0, 200)})`)
      const more = this.failures.length > 5 ? `, and ${this.failures.length - 5} more` : ''
      parts.push(`${this.failures.length} tenants failed: ${shown.join(', ')}${more}`)
    }
    if (this.deferred) parts.push(`${this.deferred} tenants waiting out a backoff after failing`)
    return parts.length ? parts.join('; ') : null
  }
}

export class JobRunner {
  readonly holder: string
  #crons: Cron[] = []
  #running = new Set<Promise<unknown>>()
  /** Jobs this process is running now: the database lease is shared by our own runs too. */
  #active = new Set<string>()
  readonly #byName: Map<string, JobDefinition>
  /** Tenants whose part of a job failed, and when the job may try them again (TenantWalk). */
  readonly #backoff = new Map<string, Backoff>()

  constructor(
    private readonly deps: Deps,
    jobs: readonly JobDefinition[],
  ) {
    this.holder = `${process.pid}:${deps.newId()}`
    this.#byName = new Map(jobs.map((j) => [j.name, j]))
  }

  get names(): string[] {
    return [...this.#byName.keys()]
  }

  has(name: string): boolean {
    return this.#byName.has(name)
  }

  start(): void {
    for (const job of this.#byName.values()) {
      const cron = new Cron(job.schedule, { timezone: 'UTC', protect: true, catch: false }, async (self: Cron) => {
        const scheduled = self.currentRun() ?? new Date()
        const p = this.run(job.name, `scheduled:${scheduled.toISOString()}`).catch((e) => this.deps.log.error('job crashed', { job: job.name, error: e }))
        this.#running.add(p)
        await p
        this.#running.delete(p)
      })
      this.#crons.push(cron)
    }
  }

  /** Stops scheduling and waits for runs in flight. */
  async stop(): Promise<void> {
    for (const c of this.#crons) c.stop()
    this.#crons = []
    await Promise.allSettled([...this.#running])
  }

  /**
   * Runs one job for `period` if this process gets the lease and nobody ran that period yet.
   * Manual runs (the test clock's POST /_test/jobs/{job}/run) pass a unique period.
   */
  async run(name: string, period: string): Promise<JobOutcome> {
    const job = this.#byName.get(name)
    if (!job) throw new Error(`unknown job ${name}`)
    if (this.#active.has(name)) return { job: name, period, outcome: 'skipped', detail: 'already running in this process' }
    // Marked before the first await: a second run of this job in this process is skipped at once.
    this.#active.add(name)
    try {
      return await this.#runLeased(job, period)
    } finally {
      this.#active.delete(name)
    }
  }

  async #runLeased(job: JobDefinition, period: string): Promise<JobOutcome> {
    const name = job.name
    const { deps } = this
    const nowUs = deps.clock.nowUs()
    const leaseUs = (job.leaseSeconds ?? 300) * 1_000_000
    // Another process holding the write lock delays a job (pauses that yield), never wedges it.
    const got = await retryWhileBusy(() =>
      withTransaction(deps.db, async (tx) => {
        const lease = await tx.select().from(jobLeases).where(eq(jobLeases.job, name)).get()
        if (lease && lease.holder !== this.holder && lease.leasedUntil > nowUs) return false
        const done = await tx
          .select()
          .from(jobRuns)
          .where(and(eq(jobRuns.job, name), eq(jobRuns.period, period)))
          .get()
        if (done) return false
        await tx
          .insert(jobLeases)
          .values({ job: name, holder: this.holder, leasedUntil: nowUs + leaseUs })
          .onConflictDoUpdate({ target: jobLeases.job, set: { holder: this.holder, leasedUntil: nowUs + leaseUs } })
          .run()
        await tx.insert(jobRuns).values({ job: name, period, holder: this.holder, startedAt: nowUs, outcome: 'running' }).run()
        return true
      }),
    )
    if (!got) return { job: name, period, outcome: 'skipped', detail: 'another process holds the lease or ran this period' }

    let outcome: JobOutcome
    try {
      // A job is idempotent for its period, so a run that met a busy database may run again.
      let walk = new TenantWalk(deps, name, this.#backoff, period)
      const own =
        (await retryWhileBusy(() => {
          walk = new TenantWalk(deps, name, this.#backoff, period)
          return job.run({ deps, period, nowUs, tenants: walk })
        })) ?? null
      const tenants = walk.summary()
      const detail = own !== null && tenants !== null ? `${own}; ${tenants}` : (own ?? tenants)
      outcome = { job: name, period, outcome: walk.failures.length ? 'partial' : 'succeeded', detail }
    } catch (e) {
      deps.log.error('job failed', { job: name, period, error: e })
      outcome = { job: name, period, outcome: 'failed', detail: e instanceof Error ? e.message : String(e) }
    }
    // When this record cannot be written the lease simply expires; the run is not retried twice.
    await retryWhileBusy(() =>
      withTransaction(deps.db, async (tx) => {
        await tx
          .update(jobRuns)
          .set({ finishedAt: deps.clock.nowUs(), outcome: outcome.outcome as 'succeeded' | 'partial' | 'failed', detail: outcome.detail })
          .where(and(eq(jobRuns.job, name), eq(jobRuns.period, period)))
          .run()
        await tx
          .delete(jobLeases)
          .where(and(eq(jobLeases.job, name), eq(jobLeases.holder, this.holder)))
          .run()
      }),
    )
    deps.log.info('job run', { job: name, period, outcome: outcome.outcome, detail: outcome.detail, at: formatTimestamp(nowUs) })
    return outcome
  }
}

/** Forgets job runs older than `days` (the period guard only matters for recent periods). */
export async function pruneJobRuns(deps: Deps, days: number): Promise<number> {
  const cutoff = deps.clock.nowUs() - days * 86_400_000_000
  const r = await withTransaction(deps.db, (tx) =>
    tx
      .delete(jobRuns)
      .where(and(lt(jobRuns.startedAt, cutoff), or(eq(jobRuns.outcome, 'succeeded'), eq(jobRuns.outcome, 'partial'), eq(jobRuns.outcome, 'failed'))))
      .run(),
  )
  return changesOf(r)
}
