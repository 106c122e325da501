import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import { holdWriteLock } from '../support/write-lock'
import { onlineServer } from '../support/commands'
import { api, closeAllAgents, eventually, newOwner, ok, type Owner } from '../support/fleet'
import { agentSessions } from '../../src/modules/fleet'

/**
 * Issue 42, the mass close in slices, on a busy database: another process holds the write lock
 * (a backup, `scripts/admin`, a second instance; tests/http/fixtures/hold-write-lock.ts) while
 * more sessions close than one slice of a presence write takes (128). Every write of them fails
 * for the lock and goes back, with what follows it, for the next flush; requests keep answering
 * meanwhile; once the lock is released every close is written, one event and one incident each,
 * none lost and none twice.
 */
let app: TestApp
let owner: Owner
const SERVERS = 130

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'flush-busy', 'pro')
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
})

const offline = async () =>
  Number(
    ((await app.deps.db.all(sql`SELECT count(*) AS n FROM servers WHERE tenant_id = ${owner.tenantId} AND presence = 'offline'`)) as { n: number }[])[0]!.n,
  )
const perServer = async (table: 'server_events' | 'alert_incidents') =>
  (
    (await app.deps.db.all(
      table === 'server_events'
        ? sql`SELECT count(*) AS n FROM server_events WHERE tenant_id = ${owner.tenantId} AND kind = 'presence.offline' GROUP BY server_id`
        : sql`SELECT count(*) AS n FROM alert_incidents WHERE tenant_id = ${owner.tenantId} AND kind = 'offline' GROUP BY server_id`,
    )) as { n: number }[]
  ).map((r) => Number(r.n))

test('closes that meet a held write lock are all kept and written once it is released', async () => {
  const servers: Awaited<ReturnType<typeof onlineServer>>[] = []
  for (let i = 0; i < SERVERS; i++) servers.push(await onlineServer(app, owner))
  for (const s of servers) s.agent.heartbeat()
  for (const s of servers) await s.agent.barrier()
  await ok(await api(app, owner, 'GET', '/servers'))
  expect(await offline()).toBe(0)

  const lock = await holdWriteLock(app)
  try {
    await Promise.all(servers.map((s) => s.agent.close()))
    // Every close has reached the service (its session released, its step taken in).
    await eventually(() => agentSessions(app.deps).serverIds().length === 0)
    // A request writes what waits first; the write meets the lock, and the request still answers.
    await ok(await api(app, owner, 'GET', '/servers'))
    expect(await offline()).toBe(0)
    expect(await perServer('server_events')).toEqual([])
  } finally {
    await lock.release()
  }
  await eventually(async () => {
    await ok(await api(app, owner, 'GET', '/servers'))
    return (await offline()) === SERVERS ? true : null
  })
  expect(await perServer('server_events')).toEqual(Array(SERVERS).fill(1))
  expect(await perServer('alert_incidents')).toEqual(Array(SERVERS).fill(1))
}, 120_000)
