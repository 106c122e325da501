import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import { onlineServer } from '../support/commands'
import { advance, api, closeAllAgents, newOwner, ok, RawAgent, type Owner } from '../support/fleet'
import { alerts, asMember, waitFor } from './support'

/**
 * Issue 42, the mass close: the sessions of several tenants' servers close together (one
 * group-committed presence flush), and what their `presence.offline` makes is pinned per server,
 * as one close alone makes it: its event; one `offline` notification (title, body, group key,
 * critical) with a delivery per channel its tenant's rule turns on (destination, status, due at
 * once: offline is critical, quiet hours or not); one open `offline` incident (title, detail,
 * severity, cause key) linked to that notification; and its live rows (the incident opened, then
 * the server offline) in its own tenant's stream. A second mass close within the grouping window
 * makes no new notification (grouped), a new incident each, linked to nothing (the notification is
 * the first incident's); one after the window makes a new notification, linked to the new incident.
 * Tenant A has a connected chat, email off for offline, quiet hours all day in Europe/Berlin;
 * tenant B has the defaults (chat and email on, neither connected).
 */
let app: TestApp
let a: Owner
let b: Owner
const CHAT = '61000077'

type Server = Awaited<ReturnType<typeof onlineServer>> & { owner: Owner; name: string }
const heartbeating = async (owner: Owner): Promise<Server> => {
  const s = await onlineServer(app, owner)
  s.agent.heartbeat()
  await s.agent.barrier()
  const name = (await ok<{ name: string }>(await api(app, owner, 'GET', `/servers/${s.server_id}`))).name
  return { ...s, owner, name }
}
const reconnect = async (s: Server) => {
  const back = await RawAgent.start(app, s.agent_token)
  back.agent.heartbeat()
  await back.agent.barrier()
  return back.agent
}
const rows = async <T>(q: ReturnType<typeof sql>) => (await app.deps.db.all(q)) as T[]

type Note = { id: string; category: string; title: string; body: string; critical: number | boolean; groupKey: string; createdAt: number }
type Delivery = { channel: string; destination: string | null; status: string; attempts: number; nextAttemptAt: number; lastError: string | null }
type Incident = { id: string; title: string; detail: string; severity: string; causeKey: string; state: string; occurrences: number; notificationIds: string }

const notesOf = (s: Server) =>
  rows<Note>(sql`SELECT id, category, title, body, critical, group_key AS "groupKey", created_at AS "createdAt" FROM notifications
    WHERE tenant_id = ${s.owner.tenantId} AND group_key = ${`offline:${s.server_id}`} ORDER BY id`)
const deliveriesOf = (id: string) =>
  rows<Delivery>(sql`SELECT channel, destination, status, attempts, next_attempt_at AS "nextAttemptAt", last_error AS "lastError"
    FROM notification_deliveries WHERE notification_id = ${id} ORDER BY channel`)
const incidentsOf = (s: Server) =>
  rows<Incident>(sql`SELECT id, title, detail, severity, cause_key AS "causeKey", state, occurrences, notification_ids AS "notificationIds"
    FROM alert_incidents WHERE tenant_id = ${s.owner.tenantId} AND server_id = ${s.server_id} AND kind = 'offline' ORDER BY id`)
const liveOf = (tenantId: string) =>
  rows<{ type: string; serverId: string | null; payload: string }>(
    sql`SELECT type, server_id AS "serverId", payload FROM live_events WHERE tenant_id = ${tenantId} ORDER BY seq`,
  )
const offlineEvents = async (s: Server) =>
  (
    await ok<{ items: { id: string; kind: string; severity: string; message: string; data: Record<string, unknown> }[] }>(
      await api(app, s.owner, 'GET', `/servers/${s.server_id}/events?kind=presence.offline&limit=100`),
    )
  ).items

/** Every server of `servers` closes at once; answers when each has its `n`-th offline incident. */
async function closeAll(servers: Server[], n: number) {
  await Promise.all(servers.map((s) => s.agent.close()))
  for (const s of servers) await waitFor(async () => ((await incidentsOf(s)).length === n ? true : null), `incident ${n} of ${s.name}`)
}

/** What one close of `s` makes, checked whole: `notified` says whether a new notification was made. */
async function expectClose(s: Server, round: number, notified: boolean, linked: 'its own' | 'nothing', liveBefore: Map<string, number>) {
  const events = await offlineEvents(s)
  expect(events).toHaveLength(round)
  expect(events[0]).toMatchObject({ kind: 'presence.offline', severity: 'warning', data: { from: 'online' } })
  expect(events[0]!.message).toStartWith('offline: ')
  expect((await ok<{ presence: string }>(await api(app, s.owner, 'GET', `/servers/${s.server_id}`))).presence).toBe('offline')

  const notes = await notesOf(s)
  const note = notes.at(-1)!
  expect(notes).toHaveLength(round === 1 ? 1 : notified ? 2 : 1)
  expect({ ...note, critical: Boolean(note.critical) }).toEqual({
    id: note.id,
    category: 'offline',
    title: `Server offline: ${s.name}`,
    body: events[0]!.message,
    critical: true,
    groupKey: `offline:${s.server_id}`,
    createdAt: note.createdAt,
  })
  const deliveries = await deliveriesOf(note.id)
  // Offline is critical: due at once, quiet hours or not.
  if (s.owner === a)
    expect(deliveries).toEqual([{ channel: 'chat', destination: CHAT, status: 'queued', attempts: 0, nextAttemptAt: note.createdAt, lastError: null }])
  else
    expect(deliveries).toEqual([
      { channel: 'chat', destination: null, status: 'skipped', attempts: 0, nextAttemptAt: note.createdAt, lastError: 'the chat channel is not_connected' },
      { channel: 'email', destination: null, status: 'skipped', attempts: 0, nextAttemptAt: note.createdAt, lastError: 'the email channel is not_connected' },
    ])

  const incidents = await incidentsOf(s)
  expect(incidents).toHaveLength(round)
  const incident = incidents.at(-1)!
  expect({ ...incident, notificationIds: JSON.parse(incident.notificationIds) }).toEqual({
    id: incident.id,
    title: `Server offline: ${s.name}`,
    detail: events[0]!.message,
    severity: 'critical',
    causeKey: `offline:${s.server_id}`,
    state: 'open',
    occurrences: 1,
    notificationIds: linked === 'its own' ? [note.id] : [],
  })
  for (const earlier of incidents.slice(0, -1)) expect(earlier.state).toBe('resolved')
  const api_ = (await alerts(app, asMember(s.owner), { kind: 'offline', server_id: s.server_id })).find((x) => x.id === incident.id)!
  expect(api_.notifications.map((x) => x.id)).toEqual(linked === 'its own' ? [note.id] : [])

  // The live rows this close wrote for the server: its incident opened, then the server offline.
  const live = (await liveOf(s.owner.tenantId)).slice(liveBefore.get(s.owner.tenantId)).filter((r) => r.serverId === s.server_id)
  expect(live.map((r) => r.type)).toEqual(['alert.opened', 'presence.offline'])
  expect(JSON.parse(live[0]!.payload)).toMatchObject({
    type: 'alert.opened',
    alert_id: incident.id,
    kind: 'offline',
    severity: 'critical',
    title: incident.title,
  })
  expect(JSON.parse(live[1]!.payload)).toMatchObject({
    type: 'presence.offline',
    server_id: s.server_id,
    from: 'online',
    to: 'offline',
    server_event_id: events[0]!.id,
  })
}

beforeAll(async () => {
  app = await startTestApp()
  a = await newOwner(app, 'mass-close-a', 'pro')
  b = await newOwner(app, 'mass-close-b', 'pro')
  const origin = { Origin: 'http://gpuhq.test' }
  await ok(
    await api(app, a, 'PUT', '/notifications/settings', {
      json: { rules: { offline: { chat: true, email: false } }, quiet_hours: { enabled: true, from: '00:00', to: '23:59' } },
      headers: origin,
    }),
  )
  await app.deps.db.run(sql`UPDATE users SET timezone = 'Europe/Berlin' WHERE id = ${a.userId}`)
  const now = app.deps.clock.nowUs()
  await app.deps.db.run(sql`UPDATE notification_channels SET status = 'connected', destination = ${CHAT}, verified_at = ${now}, updated_at = ${now}
    WHERE tenant_id = ${a.tenantId} AND kind = 'chat'`)
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
})

describe('servers of two tenants closing together', () => {
  test('each gets what one close alone gets, grouped within the window and anew after it', async () => {
    let servers = [await heartbeating(a), await heartbeating(a), await heartbeating(a), await heartbeating(b), await heartbeating(b)]
    // A request first: it writes the presence steps waiting, so the live rows counted are all of them.
    await ok(await api(app, a, 'GET', '/servers'))
    const mark = async () =>
      new Map([a, b].map((o) => [o.tenantId, 0])).set(a.tenantId, (await liveOf(a.tenantId)).length).set(b.tenantId, (await liveOf(b.tenantId)).length)

    let before = await mark()
    await closeAll(servers, 1)
    for (const s of servers) await expectClose(s, 1, true, 'its own', before)

    // Back, and closed again within the 30-minute grouping window: no new notification.
    const reopen = async () => {
      const agents = await Promise.all(servers.map(reconnect))
      servers = servers.map((s, i) => ({ ...s, agent: agents[i]! }))
      for (const s of servers) await waitFor(async () => ((await incidentsOf(s)).every((i) => i.state === 'resolved') ? true : null), `resolution of ${s.name}`)
    }
    await reopen()
    await advance(app, 600)
    before = await mark()
    await closeAll(servers, 2)
    for (const s of servers) await expectClose(s, 2, false, 'nothing', before)

    // Back, and closed again after the window: a new notification, linked to the new incident.
    await reopen()
    await advance(app, 31 * 60)
    before = await mark()
    await closeAll(servers, 3)
    for (const s of servers) await expectClose(s, 3, true, 'its own', before)
    // Nothing of one tenant's servers is in the other's stream.
    for (const [owner, other] of [
      [a, b],
      [b, a],
    ] as const)
      for (const r of await liveOf(owner.tenantId)) expect(servers.filter((s) => s.owner === other).some((s) => s.server_id === r.serverId)).toBe(false)
  })
})
