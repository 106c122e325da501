import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import { commandFrame, commandWhen, framesAbout, getCommand, issue, offlineServer, onlineServer, report, rows, steps, timeline } from '../support/commands'
import { newOwner, RawAgent, stopApp, type Owner } from '../support/fleet'
import { UUID } from '../support/problem'

/** The delivery axis over a real agent session: offline queueing, delivery on hello, re-delivery after a drop. */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'delivery', 'pro')
})
afterAll(() => stopApp(app))

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/

describe('a command for an offline server', () => {
  test('waits queued with queue_reason server_offline and every field of the resource', async () => {
    const { server_id } = await offlineServer(app, owner)
    const c = await issue(app, owner, server_id, 'gpu.set_power_limit', { gpu_index: 0, watts: 300 })
    expect(c).toMatchObject({
      tenant_id: owner.tenantId,
      server_id,
      type: 'gpu.set_power_limit',
      schema_version: 1,
      params: { gpu_index: 0, watts: 300 },
      requires: 'none',
      delivery_status: 'queued',
      execution_status: 'not_started',
      queue_reason: 'server_offline',
      progress: null,
      result: null,
      error: null,
      issued_by: { type: 'user', id: owner.userId },
      idempotency_key: null,
      sent_at: null,
      accepted_at: null,
      started_at: null,
      finished_at: null,
      cancelled_at: null,
      version: 1,
    })
    expect(c.command_id).toMatch(UUID)
    for (const f of ['created_at', 'accept_by', 'deadline']) expect(c[f]).toMatch(TIMESTAMP)
    expect(await getCommand(app, owner, c.command_id)).toEqual(c)
  })

  test('is delivered as a command frame when the agent connects and says hello, and becomes sent', async () => {
    const { server_id, agent_token } = await offlineServer(app, owner)
    const first = await issue(app, owner, server_id, 'agent.update', { version: '1.5.0' })
    const second = await issue(app, owner, server_id, 'reboot')

    const agent = await RawAgent.connect(app, agent_token)
    // Connecting is not enough: the command goes after the agent's hello.
    await agent.barrier()
    expect(agent.frames.filter((f) => f.type === 'command')).toEqual([])
    expect((await getCommand(app, owner, first.command_id)).delivery_status).toBe('queued')

    agent.send({ type: 'hello', agent_version: '1.4.0', hostname: 'rig-x', gpus: [] })
    const frame = await commandFrame(agent, first.command_id)
    expect(frame).toEqual({
      type: 'command',
      command_id: first.command_id,
      command_type: 'agent.update',
      schema_version: 1,
      params: { version: '1.5.0' },
      requires: 'none',
      deadline: first.deadline, // the resource's own microsecond timestamp
    })
    await commandFrame(agent, second.command_id)
    // Oldest first, and after the welcome.
    const types = agent.frames.map((f) => (f.type === 'command' ? f.command_id : f.type))
    expect(types).toEqual(['welcome', first.command_id, second.command_id])

    const sent = await getCommand(app, owner, first.command_id)
    expect(sent).toMatchObject({ delivery_status: 'sent', queue_reason: null, execution_status: 'not_started' })
    expect(sent.sent_at).toMatch(TIMESTAMP)
    expect(sent.version).toBeGreaterThan(first.version)
    expect(steps(await timeline(app, owner, first.command_id))).toEqual(['command:>created', 'delivery:queued>routing', 'delivery:routing>sent'])
    await agent.close()
  })

  test('for an online server goes out at once, and an accepted command is never sent again', async () => {
    const { agent, agent_token, server_id } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    expect(c).toMatchObject({ delivery_status: 'sent', queue_reason: null })
    await commandFrame(agent, c.command_id)
    expect(await report(agent, { type: 'command.accepted', command_id: c.command_id })).toEqual([])
    const accepted = await getCommand(app, owner, c.command_id)
    expect(accepted).toMatchObject({ delivery_status: 'accepted', queue_reason: null, execution_status: 'not_started' })
    expect(accepted.accepted_at).toMatch(TIMESTAMP)

    await agent.close()
    const again = await RawAgent.start(app, agent_token)
    await again.agent.barrier()
    expect(framesAbout(again.agent, 'command', c.command_id)).toEqual([])
    expect((await getCommand(app, owner, c.command_id)).delivery_status).toBe('accepted')
    await again.agent.close()
  })
})

describe('a dropped connection', () => {
  test('puts a sent but unaccepted command back in the queue (awaiting_retry) and re-sends it after the next hello', async () => {
    const { server_id, agent_token, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    await commandFrame(agent, c.command_id)
    await agent.close()

    const waiting = await commandWhen(app, owner, c.command_id, (x) => x.delivery_status === 'queued')
    expect(waiting.queue_reason).toBe('awaiting_retry')
    expect(waiting.execution_status).toBe('not_started')

    const { agent: back } = await RawAgent.start(app, agent_token)
    const frame = await commandFrame(back, c.command_id)
    expect(frame).toMatchObject({ command_id: c.command_id, command_type: 'diagnostics.run', params: {} })
    const resent = await getCommand(app, owner, c.command_id)
    expect(resent).toMatchObject({ delivery_status: 'sent', queue_reason: null })
    expect(resent.version).toBeGreaterThan(waiting.version)

    const t = await timeline(app, owner, c.command_id)
    expect(steps(t)).toEqual([
      'command:>created',
      'delivery:queued>routing',
      'delivery:routing>sent',
      'delivery:sent>queued',
      'delivery:queued>routing',
      'delivery:routing>sent',
    ])
    expect(t[3]!.note).toBe('awaiting_retry')
    expect(t[5]!.note).toBe('re-sent after reconnect')

    expect(await report(back, { type: 'command.accepted', command_id: c.command_id })).toEqual([])
    expect((await getCommand(app, owner, c.command_id)).delivery_status).toBe('accepted')
    await back.close()
  })

  test('a newer session replacing the old one re-sends what the old one never accepted', async () => {
    const { server_id, agent_token, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    await commandFrame(agent, c.command_id)
    const { agent: newer } = await RawAgent.start(app, agent_token)
    expect((await agent.closed).code).toBe(4409)
    await commandFrame(newer, c.command_id)
    expect((await rows(app, sql`SELECT send_count FROM commands WHERE id = ${c.command_id}`))[0]!.send_count).toBe(2)
    expect(await report(newer, { type: 'command.accepted', command_id: c.command_id })).toEqual([])
    await newer.close()
  })
})

describe('frames about commands', () => {
  test("a frame about another server's command gets an error frame not_found and changes nothing", async () => {
    const a = await onlineServer(app, owner)
    const b = await onlineServer(app, owner)
    const c = await issue(app, owner, a.server_id)
    await commandFrame(a.agent, c.command_id)
    const before = await getCommand(app, owner, c.command_id)
    for (const type of ['command.accepted', 'command.started', 'command.progress', 'command.log', 'command.finished']) {
      const err = await b.agent.expectError({ type, command_id: c.command_id, progress: 5, text: 'x', status: 'succeeded' })
      expect(err).toMatchObject({ type: 'error', code: 'not_found' })
    }
    const unknown = await b.agent.expectError({ type: 'command.accepted', command_id: '01890000-0000-7000-8000-000000000000' })
    expect(unknown.code).toBe('not_found')
    expect(await getCommand(app, owner, c.command_id)).toEqual(before)
    expect(b.agent.open).toBe(true)
    await a.agent.close()
    await b.agent.close()
  })

  test('malformed command frames get an error frame and the session stays open', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    await commandFrame(agent, c.command_id)
    expect((await agent.expectError({ type: 'command.accepted' })).code).toBe('validation_failed')
    expect((await agent.expectError({ type: 'command.progress', command_id: c.command_id, progress: 101 })).code).toBe('validation_failed')
    expect((await agent.expectError({ type: 'command.progress', command_id: c.command_id, progress: 2.5 })).code).toBe('validation_failed')
    expect((await agent.expectError({ type: 'command.log', command_id: c.command_id, text: 42 })).code).toBe('validation_failed')
    expect((await agent.expectError({ type: 'command.finished', command_id: c.command_id, status: 'done' })).code).toBe('validation_failed')
    // A failure without a usable error object is refused rather than stored half-formed.
    expect((await agent.expectError({ type: 'command.finished', command_id: c.command_id, status: 'failed', error: { message: 'no code' } })).code).toBe(
      'validation_failed',
    )
    expect((await agent.expectError({ type: 'command.frobnicate', command_id: c.command_id })).code).toBe('unknown_type')
    const still = await getCommand(app, owner, c.command_id)
    expect(still).toMatchObject({ delivery_status: 'sent', execution_status: 'not_started', progress: null, error: null })
    expect(agent.open).toBe(true)
    await agent.close()
  })
})
