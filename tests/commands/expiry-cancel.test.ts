import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import {
  type CommandView,
  cancelCommand,
  commandFrame,
  framesAbout,
  getCommand,
  inSeconds,
  issue,
  offlineServer,
  onlineServer,
  report,
  runExpire,
  runToEnd,
  steps,
  timeline,
} from '../support/commands'
import { advance, newOwner, ok, RawAgent, stopApp, type Owner } from '../support/fleet'
import { expectProblem } from '../support/problem'

/** accept_by and deadline through the test clock and commands.expire; best-effort cancel. */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'expiry', 'pro')
})
afterAll(() => stopApp(app))

describe('accept_by', () => {
  test('a command still queued when accept_by passes becomes delivery_failed and is never delivered', async () => {
    const { server_id, agent_token } = await offlineServer(app, owner)
    const c = await issue(app, owner, server_id, 'diagnostics.run', {}, { accept_by: inSeconds(app, 60) })
    await runExpire(app)
    expect((await getCommand(app, owner, c.command_id)).delivery_status).toBe('queued')

    await advance(app, 61)
    await runExpire(app)
    const failed = await getCommand(app, owner, c.command_id)
    expect(failed).toMatchObject({ delivery_status: 'delivery_failed', queue_reason: null, execution_status: 'not_started', sent_at: null })
    expect(failed.version).toBe(c.version + 1)
    const last = (await timeline(app, owner, c.command_id)).at(-1)!
    expect(last).toMatchObject({ axis: 'delivery', from: 'queued', to: 'delivery_failed' })
    expect(last.note).toContain('accept_by')

    // Running the job again changes nothing.
    await runExpire(app)
    expect((await getCommand(app, owner, c.command_id)).version).toBe(failed.version)

    const { agent } = await RawAgent.start(app, agent_token)
    await agent.barrier()
    expect(framesAbout(agent, 'command', c.command_id)).toEqual([])
    expect((await getCommand(app, owner, c.command_id)).delivery_status).toBe('delivery_failed')
    await agent.close()
  })

  test('a command sent but never accepted by accept_by becomes delivery_failed, and its execution expires at the deadline', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id, 'agent.restart', {}, { accept_by: inSeconds(app, 30), deadline: inSeconds(app, 90) })
    await commandFrame(agent, c.command_id)
    await advance(app, 31)
    await runExpire(app)
    expect(await getCommand(app, owner, c.command_id)).toMatchObject({ delivery_status: 'delivery_failed', execution_status: 'not_started' })
    // A late accept cannot bring it back.
    expect(await report(agent, { type: 'command.accepted', command_id: c.command_id })).toEqual([])
    expect((await getCommand(app, owner, c.command_id)).delivery_status).toBe('delivery_failed')

    await advance(app, 60)
    await runExpire(app)
    expect(await getCommand(app, owner, c.command_id)).toMatchObject({ delivery_status: 'delivery_failed', execution_status: 'expired' })
    await agent.close()
  })
})

describe('deadline', () => {
  test('a running command that has not finished by its deadline expires, and a late finished frame does not move it', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id, 'diagnostics.run', {}, { accept_by: inSeconds(app, 30), deadline: inSeconds(app, 120) })
    await commandFrame(agent, c.command_id)
    await report(agent, { type: 'command.accepted', command_id: c.command_id }, { type: 'command.started', command_id: c.command_id })
    await advance(app, 60)
    await runExpire(app)
    expect((await getCommand(app, owner, c.command_id)).execution_status).toBe('running')

    await advance(app, 61)
    await runExpire(app)
    const expired = await getCommand(app, owner, c.command_id)
    expect(expired).toMatchObject({ delivery_status: 'accepted', execution_status: 'expired' })
    expect(expired.finished_at).not.toBeNull()
    expect(steps(await timeline(app, owner, c.command_id)).at(-1)).toBe('execution:running>expired')

    expect(await report(agent, { type: 'command.finished', command_id: c.command_id, status: 'succeeded', result: {} })).toEqual([])
    expect(await getCommand(app, owner, c.command_id)).toEqual(expired)
    await agent.close()
  })
})

describe('cancel', () => {
  test('before delivery: a queued command is cancelled at once and never reaches the agent', async () => {
    const { server_id, agent_token } = await offlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    const res = await cancelCommand(app, owner, c.command_id)
    const body = (await res.json()) as CommandView
    expect(res.status).toBe(200)
    expect(body).toMatchObject({ delivery_status: 'queued', execution_status: 'cancelled', queue_reason: null })
    expect(body.cancelled_at).not.toBeNull()
    expect(body.finished_at).not.toBeNull()
    expect(res.headers.get('etag')).toBe(`"${body.version}"`)
    expect(await getCommand(app, owner, c.command_id)).toEqual(body)

    const { agent } = await RawAgent.start(app, agent_token)
    await agent.barrier()
    expect(framesAbout(agent, 'command', c.command_id)).toEqual([])
    await agent.close()
  })

  test('after sending but before accept: cancelled at once, a command.cancel frame reaches the agent, and late frames change nothing', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    await commandFrame(agent, c.command_id)
    const cancelled = await ok(await cancelCommand(app, owner, c.command_id))
    expect(cancelled).toMatchObject({ execution_status: 'cancelled' })
    expect(cancelled.cancelled_at).not.toBeNull()
    await agent.waitFor((f) => f.type === 'command.cancel' && f.command_id === c.command_id)

    const errors = await report(
      agent,
      { type: 'command.accepted', command_id: c.command_id },
      { type: 'command.started', command_id: c.command_id },
      { type: 'command.finished', command_id: c.command_id, status: 'succeeded', result: {} },
    )
    expect(errors).toEqual([])
    expect(await getCommand(app, owner, c.command_id)).toEqual(cancelled)
    await agent.close()
  })

  test('after accept: cancel is requested, and the command ends cancelled when the agent reports it stopped', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    await commandFrame(agent, c.command_id)
    await report(agent, { type: 'command.accepted', command_id: c.command_id }, { type: 'command.started', command_id: c.command_id })
    const requested = await ok(await cancelCommand(app, owner, c.command_id))
    expect(requested).toMatchObject({ delivery_status: 'accepted', execution_status: 'running', cancelled_at: null })
    await agent.waitFor((f) => f.type === 'command.cancel' && f.command_id === c.command_id)
    expect((await timeline(app, owner, c.command_id)).at(-1)).toMatchObject({ axis: 'command', to: 'cancel_requested' })

    await report(agent, {
      type: 'command.finished',
      command_id: c.command_id,
      status: 'failed',
      error: { code: 'cancelled', message: 'stopped on request', retryable: false },
    })
    const done = await getCommand(app, owner, c.command_id)
    expect(done).toMatchObject({ execution_status: 'cancelled' })
    expect(done.cancelled_at).not.toBeNull()
    expect(steps(await timeline(app, owner, c.command_id)).at(-1)).toBe('execution:running>cancelled')
    await agent.close()
  })

  test('after accept: an agent that never answers the cancel leaves the command to expire at its deadline', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id, 'diagnostics.run', {}, { accept_by: inSeconds(app, 30), deadline: inSeconds(app, 60) })
    await commandFrame(agent, c.command_id)
    await report(agent, { type: 'command.accepted', command_id: c.command_id })
    await ok(await cancelCommand(app, owner, c.command_id))
    await agent.waitFor((f) => f.type === 'command.cancel' && f.command_id === c.command_id)
    await advance(app, 61)
    await runExpire(app)
    expect(await getCommand(app, owner, c.command_id)).toMatchObject({ execution_status: 'expired', cancelled_at: null })
    await agent.close()
  })

  test('a failure with code cancelled that nobody asked for stays a failure', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    await commandFrame(agent, c.command_id)
    await report(
      agent,
      { type: 'command.accepted', command_id: c.command_id },
      { type: 'command.finished', command_id: c.command_id, status: 'failed', error: { code: 'cancelled', message: 'operator on the host', retryable: false } },
    )
    expect(await getCommand(app, owner, c.command_id)).toMatchObject({ execution_status: 'failed', cancelled_at: null })
    await agent.close()
  })

  test('of an ended command answers 409 and changes nothing', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    await commandFrame(agent, c.command_id)
    await runToEnd(agent, c.command_id)
    const done = await getCommand(app, owner, c.command_id)
    await expectProblem(await cancelCommand(app, owner, c.command_id), 409, 'conflict')
    const cancelled = await issue(app, owner, server_id, 'reboot', {}, { requires: 'idle' })
    await ok(await cancelCommand(app, owner, cancelled.command_id))
    await expectProblem(await cancelCommand(app, owner, cancelled.command_id), 409, 'conflict')
    expect(await getCommand(app, owner, c.command_id)).toEqual(done)
    await agent.close()
  })

  test('with a stale If-Match answers 412 and changes nothing; the current tag is accepted', async () => {
    const { server_id } = await offlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    await expectProblem(await cancelCommand(app, owner, c.command_id, { 'if-match': `"${c.version + 7}"` }), 412, 'conflict')
    expect(await getCommand(app, owner, c.command_id)).toEqual(c)
    const res = await cancelCommand(app, owner, c.command_id, { 'if-match': `"${c.version}"` })
    expect(res.status).toBe(200)
    expect(((await res.json()) as CommandView).execution_status).toBe('cancelled')
  })
})
