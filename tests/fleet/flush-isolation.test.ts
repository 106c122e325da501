import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import { onlineServer } from '../support/commands'
import { api, closeAllAgents, eventually, getServer, newOwner, ok, type Owner } from '../support/fleet'

/**
 * Issue 42 (the brief's "one tenant's failure must not fail the batch for others"), the presence
 * flush: the sessions of two tenants close in one group-committed write. The first tenant's
 * notification settings are damaged (rules stored as JSON null, as in presence-isolation.test.ts),
 * so the `offline` notification its server's close raises throws. The second tenant's server still
 * goes offline, with its event and incident; the first's close is kept (its server stays online
 * while its tenant waits out a backoff). Before, the whole write failed and was tried again and
 * again: no tenant's server went offline.
 */
let app: TestApp
let first: Owner
let second: Owner

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  first = await newOwner(app, 'flush-a', 'pro')
  second = await newOwner(app, 'flush-b', 'pro')
  await ok(await api(app, first, 'PUT', '/notifications/settings', { json: { rules: { offline: { chat: true } } }, headers: { Origin: 'http://gpuhq.test' } }))
  await app.deps.db.run(sql`UPDATE notification_settings SET rules = 'null' WHERE tenant_id = ${first.tenantId}`)
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
})

test("a tenant whose transition fails in a presence write does not keep the others' from being written", async () => {
  const a = await onlineServer(app, first)
  const b = await onlineServer(app, second)
  for (const s of [a, b]) {
    s.agent.heartbeat()
    await s.agent.barrier()
  }
  expect((await getServer(app, first, a.server_id)).presence).toBe('online')
  expect((await getServer(app, second, b.server_id)).presence).toBe('online')

  await Promise.all([a.agent.close(), b.agent.close()])
  // Any request writes what waits first (and answers, whatever the write met); the closes reach the service on their own.
  await eventually(async () => ((await getServer(app, second, b.server_id)).presence === 'offline' ? true : null))
  const events = await ok<{ items: { kind: string }[] }>(await api(app, second, 'GET', `/servers/${b.server_id}/events?kind=presence.offline`))
  expect(events.items).toHaveLength(1)
  const incidents = await ok<{ items: { kind: string; state: string }[] }>(await api(app, second, 'GET', `/alerts?kind=offline&server_id=${b.server_id}`))
  expect(incidents.items.map((i) => i.state)).toEqual(['open'])
  // The failing tenant's close is kept for a later write: its server is not offline yet, and reads still answer.
  expect((await getServer(app, first, a.server_id)).presence).toBe('online')
})
