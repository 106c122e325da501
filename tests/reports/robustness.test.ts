import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { call, insertServer, newTenant, setPlan, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { UNLIMITED_REPORTS } from './support'

/**
 * Issue 21, the robustness sweep of the reports: whatever a caller puts in the query (dates that
 * are not, ranges backwards or years long, zones far from UTC, unknown groupings and formats,
 * repeated parameters, text of any kind), every report answers 200 or a 422 problem that points at
 * a parameter, never a 5xx.
 */

let app: TestApp
let owner: Member
beforeAll(async () => {
  app = await startTestApp({ ...UNLIMITED_REPORTS, LOG_LEVEL: 'silent' })
  owner = await newTenant(app, 'reports-robust')
  await setPlan(app, owner.tenantId, 'pro')
  await insertServer(app, owner.tenantId, 'rig')
  // Days in a zone 14 hours ahead of UTC for the reports counted in the account's days.
  expect((await call(app, 'PATCH', '/me', owner, { json: { timezone: 'Pacific/Kiritimati' } })).status).toBe(200)
})
afterAll(() => app.close())

const date = fc.oneof(
  fc.date({ min: new Date('1990-01-01T00:00:00Z'), max: new Date('2110-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
  fc.constantFrom('2026-02-29', '2028-02-29', '2026-13-01', '2026-00-10', '2026-1-1', '0000-00-00', '9999-12-31', 'today', ''),
  fc.string({ maxLength: 12 }),
)
const param = fc.record(
  {
    from: date,
    to: date,
    group_by: fc.oneof(fc.constantFrom('day', 'week', 'month', 'year', 'DAY', ''), fc.string({ maxLength: 8 })),
    format: fc.oneof(fc.constantFrom('json', 'csv', 'xml', ''), fc.string({ maxLength: 8 })),
    days: fc.oneof(fc.integer({ min: -5, max: 400 }).map(String), fc.constantFrom('1.5', '1e2', 'x', '')),
  },
  { requiredKeys: [] },
)

describe('any query', () => {
  test('every report answers 200 or a 422 pointing at a parameter, never a 5xx', async () => {
    const failures: string[] = []
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('utilisation', 'earnings', 'spend', 'margin'), param, fc.boolean(), async (name, query, repeat) => {
        const qs = new URLSearchParams(Object.entries(query) as [string, string][])
        if (repeat && query.from !== undefined) qs.append('from', query.from)
        const res = await call(app, 'GET', `/reports/${name}?${qs}`, owner)
        const text = await res.text()
        const ok =
          res.status === 200 ||
          (res.status === 422 &&
            res.headers.get('content-type') === 'application/problem+json' &&
            /^\/(from|to|group_by|format|days)$/.test((JSON.parse(text) as { errors: { path: string }[] }).errors[0]!.path))
        if (!ok) failures.push(`${name}?${qs}: ${res.status} ${text.slice(0, 200)}`)
        return ok
      }),
      { numRuns: 300 },
    )
    expect(failures).toEqual([])
  })
})
