import type { Static } from '@sinclair/typebox'
import { isPostgres, withTransaction, type DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { assertIfMatch, etagOf } from '../../platform/etag'
import type { JobRunner } from '../../platform/jobs'
import { consumeRateLimit } from '../../platform/rate-limit'
import { formatTimestamp, parseTimestamp } from '../../platform/time'
import { TestingErrors } from './testing.errors'
import type { ClockBody, ProbeBody, RateLimitBody } from './testing.model'
import { countTo, findProbe, findSetting, insertProbe, saveSetting, sleepOnServer, updateProbeRow, type ProbeRow } from './testing.repository'

/**
 * Test-only verbs (TEST_CLOCK=true, never in production): moving the clock, running a job now,
 * and "probes", a tiny resource whose only purpose is to give the crash test, the HTTP benchmark
 * and the conventions' tests a real acknowledged write that belongs to no business feature.
 */

const CLOCK_OFFSET_KEY = 'test_clock_offset_us'

export async function loadClockOffset(db: DbOrTx): Promise<number> {
  const value = await findSetting(db, CLOCK_OFFSET_KEY)
  return value === undefined ? 0 : Number(value)
}

export async function saveClockOffset(db: DbOrTx, offsetUs: number, nowUs: number): Promise<void> {
  await withTransaction(db, (tx) => saveSetting(tx, CLOCK_OFFSET_KEY, String(offsetUs), nowUs))
}

const PUBLIC_URL_KEY = 'public_url'

/**
 * The public address the service last started with (PUBLIC_URL, else http://localhost:PORT), kept
 * so an operator command run in another shell (scripts/admin create-account) prints the links
 * where the service really answers, not its own default.
 */
export async function savePublicUrl(db: DbOrTx, url: string, nowUs: number): Promise<void> {
  await withTransaction(db, (tx) => saveSetting(tx, PUBLIC_URL_KEY, url, nowUs))
}

export async function loadPublicUrl(db: DbOrTx): Promise<string | null> {
  return (await findSetting(db, PUBLIC_URL_KEY)) ?? null
}

/** Answers once the new offset is stored (clock.saved), so a restart right after keeps it. */
export async function moveClock({ deps, input }: { deps: Deps; input: Static<typeof ClockBody> }) {
  const clock = deps.testClock!
  try {
    if (input.advance_seconds !== undefined) clock.advance(input.advance_seconds)
    else {
      const target = parseTimestamp(input.now!)
      if (target === null) throw TestingErrors.badNow()
      clock.setNow(target)
    }
  } catch (e) {
    if (e instanceof RangeError) throw TestingErrors.clockBackwards()
    throw e
  }
  await clock.saved
  return { now: formatTimestamp(clock.nowUs()) }
}

/** Runs one scheduled job now, as its schedule would. */
export async function runJobNow({ deps, runner, job }: { deps: Deps; runner: JobRunner; job: string }) {
  if (!runner.has(job)) throw TestingErrors.jobNotFound(job, runner.names)
  const r = await runner.run(job, `manual:${deps.newId()}`)
  if (r.outcome === 'skipped') throw TestingErrors.jobBusy(job)
  return { job: r.job, now: formatTimestamp(deps.clock.nowUs()), outcome: r.outcome, detail: r.detail }
}

/** Takes one request from a shared rate-limit bucket (the limiter's own tests). */
export async function takeFromBucket({ deps, bucket, input }: { deps: Deps; bucket: string; input: Static<typeof RateLimitBody> }) {
  const d = await consumeRateLimit(deps.db, deps.clock, `test:${bucket}`, input.limit, input.period_seconds)
  if (!d.allowed) throw TestingErrors.rateLimited(d.retryAfterSeconds)
  return { remaining: d.remaining }
}

export function probeView(row: ProbeRow) {
  return { id: row.id, value: row.value, version: row.version, created_at: formatTimestamp(row.createdAt) }
}

export async function createProbe({ deps, input }: { deps: Deps; input: Static<typeof ProbeBody> }): Promise<ProbeRow> {
  const row: ProbeRow = { id: deps.newId(), value: input.value, version: 1, createdAt: deps.clock.nowUs() }
  await withTransaction(deps.db, (tx) => insertProbe(tx, row))
  return row
}

export async function getProbe({ deps, id }: { deps: Deps; id: string }): Promise<ProbeRow> {
  const row = await findProbe(deps.db, id)
  if (!row) throw TestingErrors.probeNotFound()
  return row
}

export async function updateProbe({
  deps,
  id,
  ifMatch,
  input,
}: {
  deps: Deps
  id: string
  ifMatch: string | null
  input: Static<typeof ProbeBody>
}): Promise<ProbeRow> {
  return await withTransaction(deps.db, async (tx) => {
    const row = await findProbe(tx, id)
    if (!row) throw TestingErrors.probeNotFound()
    assertIfMatch(ifMatch, etagOf(row.version))
    const next = { ...row, value: input.value, version: row.version + 1 }
    await updateProbeRow(tx, id, { value: next.value, version: next.version })
    return next
  })
}

/** Iterations of the recursive count SQLite does per millisecond, measured once per process. */
let sqliteRowsPerMs: number | null = null

/**
 * POST /_test/database/slow-statement: one statement of about `ms` milliseconds, as a slow report or
 * a lock wait would be (bench/scale-out.ts measures /healthz while it runs).
 */
export async function runSlowStatement({ deps, input }: { deps: Deps; input: { ms: number } }): Promise<{ ms: number; database: 'sqlite' | 'postgres' }> {
  const started = performance.now()
  if (isPostgres(deps.db)) {
    await sleepOnServer(deps.db, input.ms / 1000)
    return { ms: Math.round(performance.now() - started), database: 'postgres' }
  }
  const count = (n: number) => countTo(deps.db, n)
  if (sqliteRowsPerMs === null) {
    const t = performance.now()
    await count(200_000)
    sqliteRowsPerMs = 200_000 / Math.max(0.1, performance.now() - t)
  }
  await count(Math.max(1, Math.round(sqliteRowsPerMs * input.ms)))
  return { ms: Math.round(performance.now() - started), database: 'sqlite' }
}
