import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { mintPat } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { issue, runToEnd } from '../support/commands'
import { closeAllClients, LiveClient, type LiveEvent } from '../support/events'
import { enrolAgent, newOwner, RawAgent, stopApp, type Owner } from '../support/fleet'

/**
 * Issue 23, "Live events": a client follows the stream with the real EventSource client while an
 * agent connects over the real WebSocket and a command runs to success; it disconnects, more happens
 * (the agent goes offline, another command is issued), and it resumes with Last-Event-ID: every
 * event arrives exactly once, in order, none lost, none duplicated.
 */

let app: TestApp
let owner: Owner
let token: string
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'live', 'pro')
  token = (await mintPat(app, { ...owner, role: 'owner' }, { scopes: ['servers:read', 'commands:read'] })).token
})
afterAll(async () => {
  closeAllClients()
  await stopApp(app)
})

/**
 * The tenant's buffered events as the database holds them, of the areas the token reads (servers and
 * commands; the offline incident its disconnect opens needs notifications:read): what the stream must show.
 */
async function buffered(tenantId: string, afterId: number): Promise<{ id: string; type: string }[]> {
  const rows = (await app.deps.db.all(sql`SELECT seq AS id, type FROM live_events WHERE tenant_id = ${tenantId} AND seq > ${afterId} ORDER BY seq`)) as {
    id: number
    type: string
  }[]
  return rows.filter((r) => /^(presence|rental|command)\./.test(r.type)).map((r) => ({ id: String(r.id), type: r.type }))
}

const brief = (events: LiveEvent[]) => events.map((e) => ({ id: e.id, type: e.type }))

describe('following the live stream and resuming it', () => {
  test('an agent connects and a command succeeds; after a disconnect the stream resumes with Last-Event-ID, losing and repeating nothing', async () => {
    const first = await LiveClient.open(app, { token })
    const start = Number(first.events[0]!.id)
    expect(first.events[0]).toMatchObject({ type: 'stream.open', data: { resumed: false, last_event_id: String(start) } })

    // An agent connects over the real WebSocket; its first heartbeat brings the server online.
    const enrolled = await enrolAgent(app, owner)
    const server = enrolled.server_id
    const { agent } = await RawAgent.start(app, enrolled.agent_token)
    agent.heartbeat()
    const online = await first.waitFor((e) => e.type === 'presence.online')
    expect(online.data).toMatchObject({ type: 'presence.online', server_id: server, from: 'offline', to: 'online' })

    // A command runs to success on it.
    const cmd = await issue(app, owner, server)
    await runToEnd(agent, cmd.command_id)
    const done = await first.waitFor((e) => e.type === 'command.succeeded')
    expect(done.data).toMatchObject({
      command_id: cmd.command_id,
      server_id: server,
      command_type: 'diagnostics.run',
      axis: 'execution',
      from: 'running',
      to: 'succeeded',
      delivery_status: 'accepted',
      execution_status: 'succeeded',
    })
    expect(first.changes().map((e) => e.type)).toEqual([
      'presence.online',
      'command.created',
      'command.routing',
      'command.sent',
      'command.accepted',
      'command.running',
      'command.succeeded',
    ])
    const resumeFrom = first.lastEventId()
    expect(resumeFrom).toBe(done.id)
    first.close()

    // While nobody follows: the agent disconnects (offline at once) and another command is issued.
    await agent.close()
    const second = await issue(app, owner, server)
    expect(second.queue_reason).toBe('server_offline')

    const resumed = await LiveClient.open(app, { token }, { lastEventId: resumeFrom })
    expect(resumed.events[0]).toMatchObject({ type: 'stream.open', id: resumeFrom, data: { resumed: true, last_event_id: resumeFrom } })
    await resumed.waitFor((e) => e.type === 'command.created' && e.data.command_id === second.command_id)
    // And the stream goes on live after the catch-up: the agent is back, the waiting command is sent.
    const again = await RawAgent.start(app, enrolled.agent_token)
    again.agent.heartbeat()
    await resumed.waitFor((e) => e.type === 'command.sent' && e.data.command_id === second.command_id)
    await resumed.waitFor((e) => e.type === 'presence.online' && Number(e.id) > Number(resumeFrom))

    const seen = [...first.changes(), ...resumed.changes()]
    const ids = seen.map((e) => Number(e.id))
    // Exactly once, in order: strictly increasing ids, and the very rows the buffer holds for the tenant.
    expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b))
    expect(brief(seen)).toEqual((await buffered(owner.tenantId, start)).slice(0, seen.length))
    expect(
      brief(resumed.changes())
        .map((e) => e.type)
        .slice(0, 2),
    ).toEqual(['presence.offline', 'command.created'])
    const offline = resumed.changes()[0]!
    expect(offline.data).toMatchObject({ server_id: server, from: 'online', to: 'offline' })
    expect(typeof offline.data.server_event_id).toBe('string')
    // Nothing written after the last event shown was missed either.
    // (The buffer is read again after each wait: an event written meanwhile is waited for too.)
    for (let last = 0, next = Number((await buffered(owner.tenantId, start)).at(-1)!.id); next > last; ) {
      last = next
      await resumed.waitFor((e) => Number(e.id) >= last)
      next = Number((await buffered(owner.tenantId, start)).at(-1)!.id)
    }
    expect(brief(resumed.changes())).toEqual(await buffered(owner.tenantId, Number(resumeFrom)))
    resumed.close()
    await again.agent.close()
  }, 60_000)
})
