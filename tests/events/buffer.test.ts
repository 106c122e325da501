import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { withTransaction } from '../../db/client'
import { buildDeps } from '../../src/deps'
import { createLogger } from '../../src/platform/logger'
import { recordServerEvent } from '../../src/modules/fleet'
import { call, insertServer, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { closeAllClients, LiveClient } from '../support/events'
import { advance, newOwner, ok, stopApp } from '../support/fleet'
import { expectProblem } from '../support/problem'

/**
 * Issue 23, "Live events": the durable, bounded buffer behind the stream. A row is written in the
 * transaction of its change (a rollback leaves none), resuming replays exactly what followed the
 * id, a resume past what the buffer still holds gets one `stream.reset`, the prune job keeps the
 * buffer within its retention and per-tenant cap, and events another process writes arrive by poll.
 */

const CAP = 100
let app: TestApp
let owner: Member
let server: string
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent', LIVE_EVENTS_MAX_PER_TENANT: String(CAP), LIVE_EVENTS_RETENTION_HOURS: '24', LIVE_STREAM_POLL_MS: '100' })
  owner = { ...(await newOwner(app, 'live-buffer', 'pro')), role: 'owner' }
  server = await insertServer(app, owner.tenantId, 'rig')
})
afterAll(async () => {
  closeAllClients()
  await stopApp(app)
})

const rowsOf = async (tenantId: string) =>
  (await app.deps.db.all(sql`SELECT seq AS id, type, server_id AS "serverId" FROM live_events WHERE tenant_id = ${tenantId} ORDER BY seq`)) as {
    id: number
    type: string
    serverId: string | null
  }[]

/** A presence step of the server, written by fleet's own code in a transaction of ours. */
const presence = async (tx: Parameters<Parameters<typeof withTransaction>[1]>[0], to: string) =>
  await recordServerEvent(tx, app.deps, { id: server, tenantId: owner.tenantId }, { kind: `presence.${to}`, message: `${to}: test`, data: { from: 'online' } })

async function command(serverId = server): Promise<string> {
  const res = await call(app, 'POST', '/commands', owner, { json: { server_id: serverId, type: 'diagnostics.run', params: {} } })
  expect(res.status).toBe(201)
  return ((await res.json()) as { command_id: string }).command_id
}

const runPrune = () => ok<{ outcome: string; detail: string }>(app.fetch('/api/v1/_test/jobs/live.prune/run', { method: 'POST' }))

describe('written with the change', () => {
  test('a change that rolls back writes no event, and the stream never shows one', async () => {
    const client = await LiveClient.open(app, { cookie: owner.session })
    const before = (await rowsOf(owner.tenantId)).length
    await expect(
      withTransaction(app.deps.db, async (tx) => {
        await presence(tx, 'offline')
        throw new Error('the change fails after its event was emitted')
      }),
    ).rejects.toThrow('the change fails')
    expect((await rowsOf(owner.tenantId)).length).toBe(before)
    // The same change committed does write one, so the check above could fail.
    await withTransaction(app.deps.db, (tx) => presence(tx, 'suspect'))
    const after = await rowsOf(owner.tenantId)
    expect(after.length).toBe(before + 1)
    expect(after.at(-1)).toMatchObject({ type: 'presence.suspect', serverId: server })
    await client.waitFor((e) => e.type === 'presence.suspect')
    expect(client.changes().map((e) => e.type)).toEqual(['presence.suspect'])
    client.close()
  })

  test('events another process writes to the same database arrive by the poll', async () => {
    const client = await LiveClient.open(app, { cookie: owner.session })
    // A second process's view of the database: its own Deps, its own (empty) set of streams.
    const other = await buildDeps(app.deps.config, { log: createLogger('silent', () => '') })
    try {
      await withTransaction(other.db, (tx) =>
        recordServerEvent(
          tx,
          other,
          { id: server, tenantId: owner.tenantId },
          { kind: 'presence.online', message: 'online (was suspect)', data: { from: 'suspect' } },
        ),
      )
      const e = await client.waitFor((x) => x.type === 'presence.online')
      expect(e.data).toMatchObject({ server_id: server, from: 'suspect', to: 'online' })
    } finally {
      other.durable.stop()
      await other.database.close()
      client.close()
    }
  })
})

describe('resuming', () => {
  test('last_event_id in the query resumes like the header; the header wins when both are sent', async () => {
    const first = await LiveClient.open(app, { cookie: owner.session })
    const one = await command()
    const e1 = await first.waitFor((e) => e.data.command_id === one)
    const two = await command()
    const e2 = await first.waitFor((e) => e.data.command_id === two)
    first.close()
    const byQuery = await LiveClient.open(app, { cookie: owner.session }, { query: `last_event_id=${e1.id}` })
    await byQuery.waitFor((e) => e.id === e2.id)
    expect(byQuery.changes().map((e) => e.id)).toEqual([e2.id])
    byQuery.close()
    const both = await LiveClient.open(app, { cookie: owner.session }, { query: 'last_event_id=0', lastEventId: e1.id })
    await both.waitFor((e) => e.id === e2.id)
    expect(both.changes().map((e) => e.id)).toEqual([e2.id])
    both.close()
  })

  test('a Last-Event-ID that is not an event id is 422, in the header or the query', async () => {
    const header = await call(app, 'GET', '/events/stream', owner, { headers: { 'last-event-id': 'abc' } })
    expect((await expectProblem(header, 422, 'validation_failed')).errors).toEqual([{ path: '/last-event-id', code: 'pattern' }])
    const query = await call(app, 'GET', '/events/stream?last_event_id=-1', owner)
    expect((await expectProblem(query, 422, 'validation_failed')).errors?.[0]?.path).toBe('/last_event_id')
  })

  test('an id never issued gets stream.reset (unknown_id), then the stream goes on from now', async () => {
    const client = await LiveClient.open(app, { cookie: owner.session }, { lastEventId: '999999999999' })
    expect(client.events.map((e) => e.type)).toEqual(['stream.reset', 'stream.open'])
    expect(client.events[0]!.data).toMatchObject({ reason: 'unknown_id', last_event_id: '999999999999' })
    expect(client.events[1]!.data.resumed).toBe(false)
    const id = await command()
    await client.waitFor((e) => e.data.command_id === id)
    client.close()
  })
})

describe('the prune job', () => {
  test('events past the retention are deleted; a resume from before them gets one stream.reset and goes on from now', async () => {
    const client = await LiveClient.open(app, { cookie: owner.session })
    const old = await command()
    const oldEvent = await client.waitFor((e) => e.data.command_id === old)
    const older = await command()
    const lastOld = await client.waitFor((e) => e.data.command_id === older)
    client.close()
    await advance(app, 25 * 3600)
    const recent = await command()
    const kept = (await rowsOf(owner.tenantId)).at(-1)!
    expect((await runPrune()).detail).toMatch(/^removed [1-9]\d* live events past retention/)
    const left = await rowsOf(owner.tenantId)
    expect(left.map((r) => r.id)).toEqual([kept.id])
    // Resuming after the first old event: the one after it is gone, so the client must reload.
    const resumed = await LiveClient.open(app, { cookie: owner.session }, { lastEventId: oldEvent.id })
    expect(resumed.events.map((e) => e.type)).toEqual(['stream.reset', 'stream.open'])
    expect(resumed.events[0]!.data).toMatchObject({ type: 'stream.reset', reason: 'pruned', last_event_id: oldEvent.id })
    // From now: the kept (older) event is not replayed after the reset, the next one comes.
    expect(Number(resumed.events[1]!.id)).toBeGreaterThanOrEqual(kept.id)
    const next = await command()
    await resumed.waitFor((e) => e.data.command_id === next)
    expect(resumed.changes().map((e) => e.data.command_id)).toEqual([next])
    expect(JSON.stringify(resumed.events)).not.toContain(recent)
    resumed.close()
    // Resuming after the last pruned event needs no reset: nothing after it was pruned.
    const fine = await LiveClient.open(app, { cookie: owner.session }, { lastEventId: lastOld.id })
    expect(fine.events[0]).toMatchObject({ type: 'stream.open', data: { resumed: true } })
    await fine.waitFor((e) => e.data.command_id === next)
    expect(fine.changes().map((e) => e.data.command_id)).toEqual([recent, next])
    fine.close()
  })

  test("a tenant keeps at most the cap; the oldest go first, another tenant's are left alone", async () => {
    const stranger = { ...(await newOwner(app, 'live-cap-other', 'pro')), role: 'owner' as const }
    const theirs = await insertServer(app, stranger.tenantId, 'their rig')
    const res = await call(app, 'POST', '/commands', stranger, { json: { server_id: theirs, type: 'diagnostics.run', params: {} } })
    expect(res.status).toBe(201)
    // Past the cap, on a few servers (each queues at most 50 commands).
    const servers = [
      await insertServer(app, owner.tenantId, 'cap 1'),
      await insertServer(app, owner.tenantId, 'cap 2'),
      await insertServer(app, owner.tenantId, 'cap 3'),
    ]
    for (let i = 0; (await rowsOf(owner.tenantId)).length < CAP + 7; i++) await command(servers[i % servers.length])
    const before = await rowsOf(owner.tenantId)
    const theirsBefore = await rowsOf(stranger.tenantId)
    expect((await runPrune()).detail).toContain(`and ${before.length - CAP} past the per-tenant cap`)
    const after = await rowsOf(owner.tenantId)
    expect(after.map((r) => r.id)).toEqual(before.slice(-CAP).map((r) => r.id))
    expect(await rowsOf(stranger.tenantId)).toEqual(theirsBefore)
    // A resume from the last pruned event is still whole (only older ones are gone); one from before it is not.
    const lastPruned = before[before.length - CAP - 1]!.id
    const whole = await LiveClient.open(app, { cookie: owner.session }, { lastEventId: String(lastPruned) })
    expect(whole.events[0]!.type).toBe('stream.open')
    await whole.waitFor((e) => Number(e.id) === after.at(-1)!.id)
    expect(whole.changes().map((e) => Number(e.id))).toEqual(after.map((r) => r.id))
    whole.close()
    const gap = await LiveClient.open(app, { cookie: owner.session }, { lastEventId: String(lastPruned - 1) })
    expect(gap.events[0]).toMatchObject({ type: 'stream.reset', data: { reason: 'pruned' } })
    gap.close()
    // Running it again changes nothing.
    expect((await runPrune()).detail).toContain('removed 0 live events past retention and 0 past the per-tenant cap')
  }, 60_000)
})
