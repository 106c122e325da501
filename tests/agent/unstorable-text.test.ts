import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { commandFrame, getCommand, issue, onlineServer, report } from '../support/commands'
import { api, newOwner, ok, stopApp, type Owner } from '../support/fleet'

/**
 * Issue 36 (6), the agent's side: text PostgreSQL cannot store (U+0000, a lone surrogate) in an
 * agent frame is kept with U+FFFD in its place (docs/agent.md), on both databases: what an agent
 * reports is kept, not refused, and never fails on the database (an `internal_error` frame).
 */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'nul-agent', 'pro')
})
afterAll(() => stopApp(app))

test('a command log, a command error and an event carrying U+0000 or a lone surrogate are stored without them', async () => {
  const s = await onlineServer(app, owner)
  const c = await issue(app, owner, s.server_id)
  await commandFrame(s.agent, c.command_id)
  const errors = await report(
    s.agent,
    { type: 'command.accepted', command_id: c.command_id },
    { type: 'command.log', command_id: c.command_id, text: 'binary\u0000output \ud800 here' },
    {
      type: 'command.finished',
      command_id: c.command_id,
      status: 'failed',
      error: { code: 'broken', message: 'nul\u0000inside', retryable: false, details: { 'k\u0000': 'v\u0000' } },
    },
    { type: 'event', kind: 'gpu.driver_error', severity: 'error', message: 'Xid\u000079', data: { raw: 'a\u0000b' } },
  )
  expect(errors).toEqual([])
  const view = await getCommand(app, owner, c.command_id)
  expect(view.error.message).toBe('nulinside')
  expect(view.error.details).toEqual({ k: 'v' })
  const log = await ok(await api(app, owner, 'GET', `/commands/${c.command_id}/logs/${view.error.log_ref}`))
  expect(log.text).toBe('binaryoutput \ufffd here\n')
  const events = await ok(await api(app, owner, 'GET', `/servers/${s.server_id}/events`))
  const event = events.items.find((e: { kind: string }) => e.kind === 'agent.gpu.driver_error')
  expect(event).toBeDefined()
  expect(JSON.stringify(event)).not.toContain('\\u0000')
  expect(event.data).toEqual({ raw: 'ab' })
  expect(event.message).toBe('Xid79')
})
