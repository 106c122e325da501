import { describe } from '../../platform/access'
import { API_PREFIX, apiRoutes } from '../../platform/api'
import { t } from 'elysia'
import type { Deps } from '../../platform/context'
import type { JobRunner } from '../../platform/jobs'
import { etagOf, ifNoneMatchHits, notModified } from '../../platform/etag'
import { requestState } from '../../platform/http'
import { idempotent } from '../../platform/idempotency'
import { responses } from '../../platform/schemas'
import { ClockBody, ClockReply, JobRunReply, Probe, ProbeBody, RateLimitBody, RateLimitReply, SlowStatementBody, SlowStatementReply } from './testing.model'
import { createProbe, getProbe, moveClock, probeView, runJobNow, runSlowStatement, takeFromBucket, updateProbe } from './testing.service'

const tags = ['test clock']
const IdParams = t.Object({ id: t.String({ format: 'uuid' }) })

/** Mounted only when TEST_CLOCK=true, which startup refuses in production (docs/configuration.md). */
export function testingRoutes(deps: Deps, runner: JobRunner) {
  return apiRoutes('testing', deps, '/_test')
    .post('/clock', ({ body }) => moveClock({ deps, input: body }), {
      body: ClockBody,
      response: responses({ 200: ClockReply }, [413, 415, 422]),
      detail: describe(
        { public: true },
        {
          tags,
          summary: 'Move the service clock forward',
          description: 'Body: exactly one of `advance_seconds` or `now` (ahead of the current time). Answers the new "now".',
        },
      ),
    })
    .post('/jobs/:job/run', ({ params }) => runJobNow({ deps, runner, job: params.job }), {
      params: t.Object({ job: t.String({ maxLength: 64 }) }),
      response: responses({ 200: JobRunReply }, [404, 409]),
      detail: describe({ public: true }, { tags, summary: 'Run one scheduled job now', description: 'Answers the service\'s "now" and the run\'s outcome.' }),
    })
    .post(
      '/probes',
      async ({ body, set }) => {
        const row = await createProbe({ deps, input: body })
        set.status = 201
        set.headers.location = `${API_PREFIX}/_test/probes/${row.id}`
        set.headers.etag = etagOf(row.version)
        return probeView(row)
      },
      {
        beforeHandle: idempotent(deps),
        body: ProbeBody,
        headers: t.Object({ 'idempotency-key': t.Optional(t.String({ minLength: 1, maxLength: 128 })) }),
        response: responses({ 201: Probe }, [409, 413, 415, 422]),
        detail: describe({ public: true }, { tags, summary: 'Create a probe (test-only write, takes Idempotency-Key)' }),
      },
    )
    .get(
      '/probes/:id',
      async ({ params, request, set }) => {
        const row = await getProbe({ deps, id: params.id })
        const tag = etagOf(row.version)
        // The 304 is a Response beside the 200 body: Elysia types an async handler's answer as one or the other.
        if (ifNoneMatchHits(request.headers.get('if-none-match'), tag)) return notModified(tag, requestState(request).id) as never
        set.headers.etag = tag
        return probeView(row)
      },
      {
        params: IdParams,
        response: responses({ 200: Probe }, [304, 404, 422]),
        detail: describe({ public: true }, { tags, summary: 'Read a probe (ETag, If-None-Match)' }),
      },
    )
    .patch(
      '/probes/:id',
      async ({ params, body, request, set }) => {
        const row = await updateProbe({ deps, id: params.id, ifMatch: request.headers.get('if-match'), input: body })
        set.headers.etag = etagOf(row.version)
        return probeView(row)
      },
      {
        params: IdParams,
        body: ProbeBody,
        response: responses({ 200: Probe }, [404, 412, 413, 415, 422]),
        detail: describe({ public: true }, { tags, summary: 'Change a probe (If-Match)' }),
      },
    )
    .post('/rate-limit/:bucket', ({ params, body }) => takeFromBucket({ deps, bucket: params.bucket, input: body }), {
      params: t.Object({ bucket: t.String({ maxLength: 64 }) }),
      body: RateLimitBody,
      response: responses({ 200: RateLimitReply }, [413, 415, 422, 429]),
      detail: describe({ public: true }, { tags, summary: 'Take one request from a shared rate-limit bucket' }),
    })
    .post('/database/slow-statement', ({ body }) => runSlowStatement({ deps, input: body }), {
      body: SlowStatementBody,
      response: responses({ 200: SlowStatementReply }, [413, 415, 422]),
      detail: describe(
        { public: true },
        {
          tags,
          summary: 'Run one statement that takes about `ms` milliseconds',
          description:
            "For the benchmark of the event loop's responsiveness (bench/scale-out.ts) and its test: on PostgreSQL `SELECT pg_sleep(…)` on one of the pool's connections; on SQLite a recursive count sized to take about as long, which holds the one connection (and, bun:sqlite being synchronous, the event loop) while it runs.",
        },
      ),
    })
}
