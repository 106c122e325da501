import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestApp, type TestApp } from '../support/app'
import { commandFrame, getCommand, issue, offlineServer, onlineServer, report, steps, timeline, type CommandView } from '../support/commands'
import { api, closeAllAgents, newOwner, ok, RawAgent, stopApp } from '../support/fleet'

/** Nothing is lost across a service restart: queued and sent commands reach the agent of the new process. */

const dir = mkdtempSync(join(tmpdir(), 'gpuhq-commands-restart-'))
const env = { LOG_LEVEL: 'silent', DATA_DIR: dir, DATABASE_URL: `file:${join(dir, 'gpuhq.db')}` }
let second: TestApp | null = null
afterAll(async () => {
  if (second) await stopApp(second)
  rmSync(dir, { recursive: true, force: true })
})

test('commands created before a restart are delivered by the new process when the agent reconnects', async () => {
  const first = await startTestApp(env)
  const owner = await newOwner(first, 'restart', 'pro')
  const offline = await offlineServer(first, owner)
  const online = await onlineServer(first, owner)

  const waiting: CommandView[] = []
  for (const [type, params] of [
    ['diagnostics.run', {}],
    ['gpu.set_power_limit', { gpu_index: 0, watts: 275 }],
    ['agent.update', { version: '1.5.0' }],
  ] as const)
    waiting.push(await issue(first, owner, offline.server_id, type, params))
  const inFlight = await issue(first, owner, online.server_id, 'agent.restart')
  await commandFrame(online.agent, inFlight.command_id)
  const running = await issue(first, owner, online.server_id, 'diagnostics.run')
  await commandFrame(online.agent, running.command_id)
  await report(
    online.agent,
    { type: 'command.accepted', command_id: running.command_id },
    { type: 'command.started', command_id: running.command_id },
    { type: 'command.progress', command_id: running.command_id, progress: 30 },
  )
  const beforeRunning = await getCommand(first, owner, running.command_id)
  const beforeTimeline = await timeline(first, owner, waiting[0]!.command_id)

  await closeAllAgents()
  await first.close()

  second = await startTestApp(env)
  const app = second
  // The owner's session, the commands, their versions and timelines all survived.
  for (const c of waiting) expect(await getCommand(app, owner, c.command_id)).toEqual(c)
  expect(await getCommand(app, owner, running.command_id)).toEqual(beforeRunning)
  expect(await timeline(app, owner, waiting[0]!.command_id)).toEqual(beforeTimeline)
  expect(await getCommand(app, owner, inFlight.command_id)).toMatchObject({ delivery_status: 'queued', queue_reason: 'awaiting_retry' })

  const { agent } = await RawAgent.start(app, offline.agent_token)
  const frames = await Promise.all(waiting.map((c) => commandFrame(agent, c.command_id)))
  expect(frames.map((f) => [f.command_type, f.params])).toEqual(waiting.map((c) => [c.type, c.params]))
  for (const c of waiting) expect((await getCommand(app, owner, c.command_id)).delivery_status).toBe('sent')

  const { agent: again } = await RawAgent.start(app, online.agent_token)
  await commandFrame(again, inFlight.command_id)
  await again.barrier()
  // The accepted one is not sent again; its agent can still finish it on the new process.
  expect(again.frames.filter((f) => f.type === 'command').map((f) => f.command_id)).toEqual([inFlight.command_id])
  expect(await report(again, { type: 'command.finished', command_id: running.command_id, status: 'succeeded', result: { ok: 1 } })).toEqual([])
  expect(await getCommand(app, owner, running.command_id)).toMatchObject({ execution_status: 'succeeded', progress: 100 })
  expect(steps(await timeline(app, owner, inFlight.command_id)).slice(-2)).toEqual(['delivery:queued>routing', 'delivery:routing>sent'])
  expect((await ok(await api(app, owner, 'GET', `/commands?server_id=${offline.server_id}`))).items).toHaveLength(3)
})

test('stopping the process closes open agent sessions (1001) and a command they never accepted is re-sent by the next process', async () => {
  const dir2 = mkdtempSync(join(tmpdir(), 'gpuhq-commands-restart-'))
  const env2 = { ...env, DATA_DIR: dir2, DATABASE_URL: `file:${join(dir2, 'gpuhq.db')}` }
  try {
    const first = await startTestApp(env2)
    const owner = await newOwner(first, 'crash', 'pro')
    const online = await onlineServer(first, owner)
    const c = await issue(first, owner, online.server_id, 'reboot')
    await commandFrame(online.agent, c.command_id)
    // The process goes away under the open session.
    await Promise.race([first.close(), Bun.sleep(4000).then(() => Promise.reject(new Error('the app did not stop within 4 s')))])
    expect((await online.agent.closed).code).toBe(1001)

    const next = await startTestApp(env2)
    try {
      // The stopping process put the unaccepted command back in the queue before closing the database.
      expect(await getCommand(next, owner, c.command_id)).toMatchObject({ delivery_status: 'queued', queue_reason: 'awaiting_retry' })
      const { agent } = await RawAgent.start(next, online.agent_token)
      await commandFrame(agent, c.command_id)
      expect(await report(agent, { type: 'command.accepted', command_id: c.command_id })).toEqual([])
      expect((await getCommand(next, owner, c.command_id)).delivery_status).toBe('accepted')
    } finally {
      await stopApp(next)
    }
  } finally {
    rmSync(dir2, { recursive: true, force: true })
  }
})
