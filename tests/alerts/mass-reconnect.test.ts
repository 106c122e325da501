import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import { onlineServer } from '../support/commands'
import { api, closeAllAgents, newOwner, ok, RawAgent, type Owner } from '../support/fleet'
import { alerts, asMember, waitFor } from './support'

/**
 * Issue 42, the mass reconnect: the presence transitions of one group-committed flush are recorded
 * per batch (server.events_recorded), and their reactions read and write per batch. Every server of
 * several tenants still gets exactly what one alone gets: its presence.offline notification, one
 * offline incident linked to it, resolved when its agent's first heartbeat brings it back, and the
 * live rows of each change in its own tenant's stream, in order. One server closes and reconnects
 * twice in quick succession (two batches of one flush): two incidents, each resolved.
 */
let app: TestApp
let a: Owner
let b: Owner

type Server = Awaited<ReturnType<typeof onlineServer>>
const heartbeating = async (owner: Owner): Promise<Server> => {
  const s = await onlineServer(app, owner)
  s.agent.heartbeat()
  await s.agent.barrier()
  return s
}
const reconnect = async (s: Server) => {
  const back = await RawAgent.start(app, s.agent_token)
  back.agent.heartbeat()
  await back.agent.barrier()
  return back
}
const liveOf = async (tenantId: string) =>
  (await app.deps.db.all(sql`SELECT type, server_id AS "serverId" FROM live_events WHERE tenant_id = ${tenantId} ORDER BY seq`)) as {
    type: string
    serverId: string | null
  }[]
const offlineNotifications = async (owner: Owner, name: string) =>
  (await ok<{ items: { id: string; title: string }[] }>(await api(app, owner, 'GET', '/notifications/history?limit=100'))).items.filter(
    (n) => n.title === `Server offline: ${name}`,
  )

beforeAll(async () => {
  app = await startTestApp()
  a = await newOwner(app, 'mass-reconnect-a', 'pro')
  b = await newOwner(app, 'mass-reconnect-b', 'pro')
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
})

describe('servers of two tenants closing and reconnecting together', () => {
  test('each gets its own notification and incident, resolved on its return, and its live rows in its tenant only', async () => {
    const servers = [await heartbeating(a), await heartbeating(a), await heartbeating(a), await heartbeating(b)]
    const ownerOf = (i: number) => (i < 3 ? a : b)
    // A request first: it writes the presence steps waiting (the last heartbeat's), so the rows counted are all of them.
    await ok(await api(app, a, 'GET', '/servers'))
    const before = { a: (await liveOf(a.tenantId)).length, b: (await liveOf(b.tenantId)).length }

    // All close at once (one presence flush), then all come back at once.
    await Promise.all(servers.map((s) => s.agent.close()))
    for (const [i, s] of servers.entries())
      await waitFor(async () => ((await alerts(app, asMember(ownerOf(i)), { kind: 'offline', server_id: s.server_id })).length ? true : null), 'offline')
    const back = await Promise.all(servers.map(reconnect))

    for (const [i, s] of servers.entries()) {
      const owner = ownerOf(i)
      const name = (await ok<{ name: string }>(await api(app, owner, 'GET', `/servers/${s.server_id}`))).name
      const [incident, ...more] = await waitFor(async () => {
        const list = await alerts(app, asMember(owner), { kind: 'offline', server_id: s.server_id })
        return list.length && list.every((x) => x.state === 'resolved') ? list : null
      }, 'the resolution')
      expect(more).toEqual([])
      const notified = await offlineNotifications(owner, name)
      expect(notified).toHaveLength(1)
      expect(incident).toMatchObject({ state: 'resolved', resolution: 'the server is back online', resolved_by: null, occurrences: 1 })
      expect(incident!.notifications.map((n) => n.id)).toEqual([notified[0]!.id])
      expect((await ok<{ presence: string }>(await api(app, owner, 'GET', `/servers/${s.server_id}`))).presence).toBe('online')
    }

    // The live rows: for each server, its incident opened, the server offline, the incident resolved, the server online, in that order.
    for (const [owner, mine, skip] of [
      [a, servers.slice(0, 3), before.a],
      [b, servers.slice(3), before.b],
    ] as const) {
      const rows = (await liveOf(owner.tenantId)).slice(skip)
      for (const s of mine)
        expect(rows.filter((r) => r.serverId === s.server_id).map((r) => r.type)).toEqual([
          'alert.opened',
          'presence.offline',
          'alert.resolved',
          'presence.online',
        ])
      expect(rows.every((r) => mine.some((s) => s.server_id === r.serverId))).toBe(true)
    }
    await Promise.all(back.map((x) => x.agent.close()))
  })

  test('a server that closes, returns, closes and returns again in quick succession gets two incidents, each resolved', async () => {
    const s = await heartbeating(a)
    await s.agent.close()
    let again = await reconnect(s)
    await again.agent.close()
    again = await reconnect(s)
    const list = await waitFor(async () => {
      const l = await alerts(app, asMember(a), { kind: 'offline', server_id: s.server_id })
      return l.length === 2 && l.every((x) => x.state === 'resolved') ? l : null
    }, 'two resolved incidents')
    expect(list.map((x) => x.resolution)).toEqual(['the server is back online', 'the server is back online'])
    const events = await ok<{ items: { kind: string }[] }>(await api(app, a, 'GET', `/servers/${s.server_id}/events?limit=100`))
    expect(
      events.items
        .map((e) => e.kind)
        .filter((k) => k.startsWith('presence.'))
        .reverse(),
    ).toEqual(['presence.online', 'presence.offline', 'presence.online', 'presence.offline', 'presence.online'])
    await again.agent.close()
  })
})
