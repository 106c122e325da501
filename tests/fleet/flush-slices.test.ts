import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import { onlineServer } from '../support/commands'
import { advance, api, closeAllAgents, eventually, newOwner, ok, type Owner } from '../support/fleet'

/**
 * Issue 42, the mass close in slices: a presence write takes at most 128 steps per transaction, so
 * the 160 sessions of two tenants closing at once are written in two or more. The first tenant's
 * notification settings are damaged (as in flush-isolation.test.ts), so its servers' closes throw
 * in every slice that holds one: the second tenant's servers all go offline, each with one event
 * and one incident; the first tenant's closes are all kept (none of its servers offline, none
 * written out of order from a later slice), and once its settings are mended and its backoff is
 * over, every one of them is written, one event each.
 */
let app: TestApp
let first: Owner
let second: Owner
const FIRST = 140
const SECOND = 20

type Server = Awaited<ReturnType<typeof onlineServer>>
/** The tenant's servers offline (each tenant here holds only the test's servers). */
const offlineCount = async (owner: Owner) =>
  Number(
    ((await app.deps.db.all(sql`SELECT count(*) AS n FROM servers WHERE tenant_id = ${owner.tenantId} AND presence = 'offline'`)) as { n: number }[])[0]!.n,
  )
const perServer = async (table: 'server_events' | 'alert_incidents', owner: Owner) =>
  (await app.deps.db.all(
    table === 'server_events'
      ? sql`SELECT server_id AS "serverId", count(*) AS n FROM server_events WHERE tenant_id = ${owner.tenantId} AND kind = 'presence.offline' GROUP BY server_id`
      : sql`SELECT server_id AS "serverId", count(*) AS n FROM alert_incidents WHERE tenant_id = ${owner.tenantId} AND kind = 'offline' GROUP BY server_id`,
  )) as { serverId: string; n: number }[]

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  first = await newOwner(app, 'slices-a', 'pro')
  second = await newOwner(app, 'slices-b', 'pro')
  await ok(await api(app, first, 'PUT', '/notifications/settings', { json: { rules: { offline: { chat: true } } }, headers: { Origin: 'http://gpuhq.test' } }))
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
})

test("a tenant whose closes fail in every slice keeps them all, in order, and the other's are written", async () => {
  const a: Server[] = []
  const b: Server[] = []
  for (let i = 0; i < Math.max(FIRST, SECOND); i++) {
    if (i < FIRST) a.push(await onlineServer(app, first))
    if (i < SECOND) b.push(await onlineServer(app, second))
  }
  for (const s of [...a, ...b]) s.agent.heartbeat()
  for (const s of [...a, ...b]) await s.agent.barrier()
  await ok(await api(app, first, 'GET', '/servers'))
  await app.deps.db.run(sql`UPDATE notification_settings SET rules = 'null' WHERE tenant_id = ${first.tenantId}`)

  // The first tenant alone has more closes than a slice takes: they are in every slice of the write.
  await Promise.all([...a, ...b].map((s) => s.agent.close()))
  await eventually(async () => ((await offlineCount(second)) === SECOND ? true : null))
  expect((await perServer('server_events', second)).map((r) => Number(r.n))).toEqual(Array(SECOND).fill(1))
  expect((await perServer('alert_incidents', second)).map((r) => Number(r.n))).toEqual(Array(SECOND).fill(1))
  // Any request writes what waits first: the first tenant's closes are still kept.
  await ok(await api(app, first, 'GET', '/servers'))
  expect(await offlineCount(first)).toBe(0)
  expect(await perServer('server_events', first)).toEqual([])

  // Mended, and past its backoff: every close is written, one event and one incident each.
  await app.deps.db.run(sql`UPDATE notification_settings SET rules = '{}' WHERE tenant_id = ${first.tenantId}`)
  await advance(app, 3600)
  await eventually(async () => {
    await ok(await api(app, first, 'GET', '/servers'))
    return (await offlineCount(first)) === FIRST ? true : null
  })
  expect((await perServer('server_events', first)).map((r) => Number(r.n))).toEqual(Array(FIRST).fill(1))
  expect((await perServer('alert_incidents', first)).map((r) => Number(r.n))).toEqual(Array(FIRST).fill(1))
})
