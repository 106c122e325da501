import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { insertServer } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { advance, api, getServer, newOwner, ok, stopApp, type Owner } from '../support/fleet'

/**
 * Issue 34, "Jobs isolate tenants", presence.sweep: each server's transition (with the notification
 * it raises) is its own part of the job's per-tenant error boundary. Two tenants, each with a server
 * that heartbeated once and then fell silent; the first tenant's notification settings are damaged
 * as an old or broken database might hold them (rules stored as JSON null), so the `offline`
 * notification its server's transition raises throws. The second tenant's server still goes
 * offline, the run is partial, and the first one is not tried again at the next tick.
 */
let app: TestApp
let first: Owner
let second: Owner
let firstServer: string
let secondServer: string

type Run = { outcome: string; detail: string | null }
const sweep = () => ok<Run>(app.fetch('/api/v1/_test/jobs/presence.sweep/run', { method: 'POST' }))

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  ;[first, second] = [await newOwner(app, 'sweep-a', 'pro'), await newOwner(app, 'sweep-b', 'pro')].sort((a, b) => (a.tenantId < b.tenantId ? -1 : 1)) as [
    Owner,
    Owner,
  ]
  firstServer = await insertServer(app, first.tenantId, 'rig-a')
  secondServer = await insertServer(app, second.tenantId, 'rig-b')
  // Both were online: their last heartbeat is now (as the agent session would have written it).
  for (const id of [firstServer, secondServer])
    await app.deps.db.run(sql`UPDATE servers SET presence = 'online', last_seen_at = ${app.deps.clock.nowUs()} WHERE id = ${id}`)
  await ok(await api(app, first, 'PUT', '/notifications/settings', { json: { rules: { offline: { chat: true } } }, headers: { Origin: 'http://gpuhq.test' } }))
  await app.deps.db.run(sql`UPDATE notification_settings SET rules = 'null' WHERE tenant_id = ${first.tenantId}`)
})
afterAll(() => stopApp(app))

test("a server whose transition fails does not stop the others'; the run is partial and that server waits out a backoff", async () => {
  await advance(app, 301)
  const run = await sweep()
  expect(run.outcome).toBe('partial')
  expect(run.detail).toContain(`1 tenants failed: ${first.tenantId} (server ${firstServer}: `)
  expect(run.detail).toContain('0 servers became suspect, 1 offline')
  expect((await getServer(app, second, secondServer)).presence).toBe('offline')
  expect((await getServer(app, first, firstServer)).presence).toBe('online')

  // The next tick, 15 s later, leaves it alone.
  await advance(app, 15)
  const next = await sweep()
  expect(next).toMatchObject({ outcome: 'succeeded' })
  expect(next.detail).toContain('1 tenants waiting out a backoff after failing')
  expect((await getServer(app, first, firstServer)).presence).toBe('online')
})
