import { Database } from 'bun:sqlite'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import { MIGRATIONS_FOLDER } from '../../db/client'
import { call, insertServer, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { closeAllClients, LiveClient } from '../support/events'
import { newOwner, stopApp } from '../support/fleet'
import { onPostgres } from '../support/postgres'

/**
 * Issue 34 finding 10: the stream's event ids came from one sequence shared by every tenant, so a
 * tenant saw them jump whenever another tenant acted. They are now the tenant's own sequence
 * (docs/events.md "Event ids"): 1, 2, 3… whatever anyone else does, and a resume after a missed
 * event still delivers exactly the events missed, in order, once each.
 */

let app: TestApp
let alice: Member
let bob: Member
let aliceServer: string
let bobServer: string
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  alice = { ...(await newOwner(app, 'alice', 'pro')), role: 'owner' }
  bob = { ...(await newOwner(app, 'bob', 'pro')), role: 'owner' }
  aliceServer = await insertServer(app, alice.tenantId, 'alice rig')
  bobServer = await insertServer(app, bob.tenantId, 'bob rig')
})
afterAll(async () => {
  closeAllClients()
  await stopApp(app)
})

/** Issues a command on the member's server: one `command.created` event in their tenant. */
async function act(who: Member, serverId: string): Promise<string> {
  const res = await call(app, 'POST', '/commands', who, { json: { server_id: serverId, type: 'diagnostics.run', params: {} } })
  expect(res.status).toBe(201)
  return ((await res.json()) as { command_id: string }).command_id
}

describe('event ids are per tenant', () => {
  test("a new tenant's ids start at 1 and grow by one per event of its own, however much another tenant does", async () => {
    // Bob is busy before and in between; none of it shows in Alice's ids.
    for (let i = 0; i < 5; i++) await act(bob, bobServer)
    const stream = await LiveClient.open(app, { cookie: alice.session })
    expect(stream.events[0]).toMatchObject({ id: '0', type: 'stream.open', data: { last_event_id: '0' } })
    const first = await act(alice, aliceServer)
    for (let i = 0; i < 7; i++) await act(bob, bobServer)
    const second = await act(alice, aliceServer)
    await stream.waitFor((e) => e.data.command_id === second)
    expect(stream.changes().map((e) => ({ id: e.id, command: e.data.command_id }))).toEqual([
      { id: '1', command: first },
      { id: '2', command: second },
    ])
    stream.close()
    // Bob's stream counts his own 12 events the same way.
    for (let i = 0; i < 3; i++) await act(bob, bobServer)
    const bobs = await LiveClient.open(app, { cookie: bob.session })
    expect(bobs.events[0]).toMatchObject({ id: '15', type: 'stream.open' })
    bobs.close()
    // A new stream of Alice's starts where her own events are, not where the service's are.
    const again = await LiveClient.open(app, { cookie: alice.session })
    expect(again.events[0]).toMatchObject({ id: '2', type: 'stream.open', data: { last_event_id: '2' } })
    again.close()
  })

  test('a resume after missed events delivers exactly those, in order, with the ids a live stream would have shown', async () => {
    const live = await LiveClient.open(app, { cookie: alice.session })
    const seen = await act(alice, aliceServer)
    const last = await live.waitFor((e) => e.data.command_id === seen)
    live.close()
    // While Alice is away both tenants act, interleaved.
    const missed: string[] = []
    for (let i = 0; i < 3; i++) {
      await act(bob, bobServer)
      missed.push(await act(alice, aliceServer))
      await act(bob, bobServer)
    }
    const resumed = await LiveClient.open(app, { cookie: alice.session }, { lastEventId: last.id })
    expect(resumed.events[0]).toMatchObject({ type: 'stream.open', id: last.id, data: { resumed: true, last_event_id: last.id } })
    await resumed.waitFor((e) => e.data.command_id === missed.at(-1))
    const after = await act(alice, aliceServer)
    await resumed.waitFor((e) => e.data.command_id === after)
    const base = Number(last.id)
    expect(resumed.changes().map((e) => ({ id: e.id, command: e.data.command_id }))).toEqual(
      [...missed, after].map((command, i) => ({ id: String(base + 1 + i), command })),
    )
    resumed.close()
  })

  test('an id above the tenant’s own last one was never issued to it: stream.reset, whatever other tenants reached', async () => {
    for (let i = 0; i < 3; i++) await act(bob, bobServer)
    const bobs = await LiveClient.open(app, { cookie: bob.session })
    const bobLast = bobs.events[0]!.id
    bobs.close()
    const alices = await LiveClient.open(app, { cookie: alice.session })
    const aliceLast = Number(alices.events[0]!.id)
    alices.close()
    expect(Number(bobLast)).toBeGreaterThan(aliceLast)
    const probe = await LiveClient.open(app, { cookie: alice.session }, { lastEventId: bobLast })
    expect(probe.events.map((e) => e.type)).toEqual(['stream.reset', 'stream.open'])
    expect(probe.events[0]!.data).toMatchObject({ reason: 'unknown_id', last_event_id: bobLast })
    expect(probe.events[1]!.id).toBe(String(aliceLast))
    probe.close()
  })
})

describe('upgrading a buffer written with the shared sequence', () => {
  // A SQLite file migrated to just before per-tenant ids, then opened by this build (which applies
  // the rest). PostgreSQL's migration is the same statements in its dialect (db/migrations-pg/*_live_event_seq_backfill.sql).
  test.skipIf(onPostgres)(
    'events written before the upgrade keep their ids, so a saved Last-Event-ID still points at them; each tenant goes on above every id handed out',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gpuhq-live-upgrade-'))
      const folder = join(dir, 'migrations')
      mkdirSync(join(folder, 'meta'), { recursive: true })
      const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string }[] }
      const upTo = journal.entries.findIndex((e) => e.tag.endsWith('_live_event_tenant_ids'))
      expect(upTo).toBeGreaterThan(0)
      journal.entries = journal.entries.slice(0, upTo)
      writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify(journal))
      for (const e of journal.entries) cpSync(join(MIGRATIONS_FOLDER, `${e.tag}.sql`), join(folder, `${e.tag}.sql`))
      const file = join(dir, 'old.db')
      const old = new Database(file)
      migrate(drizzle(old), { migrationsFolder: folder })
      // Two tenants' events interleaved in the shared sequence: ids 1..6, A has 1, 3, 4, 6.
      const insert = old.prepare('INSERT INTO live_events (tenant_id, server_id, type, payload, created_at) VALUES (?, NULL, ?, ?, ?)')
      const now = Date.now() * 1000
      for (const [i, tenant] of ['A', 'B', 'A', 'A', 'B', 'A'].entries())
        insert.run(`tenant-${tenant}`, 'topup.succeeded', JSON.stringify({ type: 'topup.succeeded', n: i + 1 }), now)
      old.close()

      const upgraded = await startTestApp({ LOG_LEVEL: 'silent', DATABASE_URL: `file:${file}` })
      try {
        const ids = async (tenant: string) =>
          ((await upgraded.deps.db.all(sql`SELECT seq FROM live_events WHERE tenant_id = ${`tenant-${tenant}`} ORDER BY seq`)) as { seq: number }[]).map(
            (r) => r.seq,
          )
        expect({ a: await ids('A'), b: await ids('B') }).toEqual({ a: [1, 3, 4, 6], b: [2, 5] })
        const next = await upgraded.deps.db.all(sql`SELECT tenant_id AS t, last_seq AS s FROM live_event_sequences ORDER BY tenant_id`)
        expect(next).toEqual([
          { t: 'tenant-A', s: 6 },
          { t: 'tenant-B', s: 6 },
        ])
      } finally {
        await upgraded.close()
        rmSync(dir, { recursive: true, force: true })
      }
    },
  )
})
