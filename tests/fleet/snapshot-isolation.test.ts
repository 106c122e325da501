import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { insertServer } from '../support/access'
import { startEarlyInUtcDay, startTestApp, type TestApp } from '../support/app'
import { advance, api, newOwner, ok, stopApp, type FleetList, type Owner } from '../support/fleet'
import { utcDay } from '../../src/platform/time'

/**
 * Issue 34, "Jobs isolate tenants", fleet.snapshot: each tenant's snapshot is refreshed in its own
 * part of the job's per-tenant error boundary, tenants in id order. The first tenant holds two
 * earnings rows for today as a database from before the bounds might (5,000,000,000 USD each, on
 * two marketplaces): its row's revenue today is past the money range and cannot be formatted. The
 * second tenant's snapshot is still refreshed, the run is partial, and the failing tenant is not
 * tried again at the next run.
 */
let app: TestApp
let first: Owner
let second: Owner
let secondServer: string

type Run = { outcome: string; detail: string | null }
const runSnapshot = () => ok<Run>(app.fetch('/api/v1/_test/jobs/fleet.snapshot/run', { method: 'POST' }))

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await startEarlyInUtcDay(app) // the poisoned rows are today's: the clock must not cross midnight while the test moves it
  ;[first, second] = [await newOwner(app, 'snap-a', 'pro'), await newOwner(app, 'snap-b', 'pro')].sort((a, b) => (a.tenantId < b.tenantId ? -1 : 1)) as [
    Owner,
    Owner,
  ]
  const firstServer = await insertServer(app, first.tenantId, 'rig-a')
  secondServer = await insertServer(app, second.tenantId, 'rig-b')
  const day = utcDay(app.deps.clock.nowUs())
  for (const marketplace of ['marketplace_a', 'marketplace_b'])
    await app.deps.db.run(
      sql`INSERT INTO earnings_days (tenant_id, server_id, marketplace, day, accrued_usd_micros, accrued_us, gap_us, samples, platform_usd_micros, by_currency, updated_at) VALUES (${first.tenantId}, ${firstServer}, ${marketplace}, ${day}, 5000000000000000, 0, 0, 1, NULL, '{}', ${app.deps.clock.nowUs()})`,
    )
})
afterAll(() => stopApp(app))

test("a tenant whose snapshot cannot be computed does not stop the others' refresh; the run is partial and the tenant waits out a backoff", async () => {
  // The second tenant's snapshot exists, then ages past its 60 s life.
  const before = await ok<FleetList>(await api(app, second, 'GET', '/servers'))
  expect(before.items.map((r) => r.id)).toEqual([secondServer])
  await advance(app, 120)

  const run = await runSnapshot()
  expect(run.outcome).toBe('partial')
  expect(run.detail).toContain(`1 tenants failed: ${first.tenantId} (money must be an integer of micro-USD`)
  const after = await ok<FleetList>(await api(app, second, 'GET', '/servers'))
  expect(after).toMatchObject({ stale: false })
  expect(after.generated_at).not.toBe(before.generated_at)

  // At the next run, 30 s later, the failing tenant is left alone; the other is refreshed again.
  await advance(app, 30)
  const next = await runSnapshot()
  expect(next).toMatchObject({ outcome: 'succeeded' })
  expect(next.detail).toContain('1 tenants waiting out a backoff after failing')
  expect((await ok<FleetList>(await api(app, second, 'GET', '/servers'))).generated_at).not.toBe(after.generated_at)
})
