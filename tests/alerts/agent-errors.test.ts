import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { onlineServer } from '../support/commands'
import { api, closeAllAgents, newOwner, ok, type Owner, type RawAgent } from '../support/fleet'
import { advance, alert, alerts, asMember, evaluate, NOTHING_CHANGED } from './support'

/**
 * Issue 21, the `agent_error` cause: an event the agent reports with severity error or critical (the
 * same events the `error` notification covers) opens one incident per server and kind; the same
 * report again is a repeat; a critical one raises the severity; alerts.evaluate resolves it once the
 * agent has not reported it for an hour. The reports travel as `event` frames over a real WebSocket.
 */

let app: TestApp
let owner: Owner
let agent: RawAgent
let serverId: string
let name: string

const errorsOf = () => alerts(app, asMember(owner), { kind: 'agent_error', server_id: serverId })
async function report(kind: string, severity: string, message: string): Promise<void> {
  agent.event(kind, severity, message)
  await agent.barrier()
}

beforeAll(async () => {
  app = await startTestApp()
  owner = await newOwner(app, 'alerts-errors', 'pro')
  ;({ agent, server_id: serverId } = await onlineServer(app, owner))
  name = (await ok<{ name: string }>(await api(app, owner, 'GET', `/servers/${serverId}`))).name
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
})

describe('errors the agent reports', () => {
  test('an error report opens one warning incident, linked to the error notification it produced', async () => {
    await report('gpu_fell_off_bus', 'error', 'GPU 1 fell off the bus')
    const list = await errorsOf()
    expect(list).toHaveLength(1)
    expect(list[0]).toMatchObject({
      cause_key: `agent_error:${serverId}:agent.gpu_fell_off_bus`,
      severity: 'warning',
      state: 'open',
      title: `Agent reported gpu_fell_off_bus: ${name}`,
      detail: 'GPU 1 fell off the bus',
      occurrences: 1,
    })
    expect(list[0]!.notifications.map((n) => [n.category, n.title])).toEqual([['error', `Agent reported an error: ${name}`]])
  })

  test('the same error again counts as a repeat of the open incident, and a critical one raises its severity', async () => {
    const [before] = await errorsOf()
    await advance(app, 60)
    await report('gpu_fell_off_bus', 'error', 'GPU 1 fell off the bus again')
    await advance(app, 60)
    await report('gpu_fell_off_bus', 'critical', 'GPU 1 is gone')
    const list = await errorsOf()
    expect(list).toHaveLength(1)
    expect(list[0]).toMatchObject({ id: before!.id, severity: 'critical', occurrences: 3, detail: 'GPU 1 is gone', opened_at: before!.opened_at })
    expect(list[0]!.last_seen_at > before!.last_seen_at).toBe(true)
    // The notifier grouped the repeats into its first notification: still one linked.
    expect(list[0]!.notifications).toEqual(before!.notifications)
  })

  test('another kind is another cause; warnings and information open nothing', async () => {
    await report('xid_error', 'error', 'Xid 79')
    await report('fan_slow', 'warning', 'fan 2 is slow')
    await report('driver_loaded', 'info', 'driver 550 loaded')
    expect((await errorsOf()).map((i) => i.cause_key).sort()).toEqual([
      `agent_error:${serverId}:agent.gpu_fell_off_bus`,
      `agent_error:${serverId}:agent.xid_error`,
    ])
  })

  test('alerts.evaluate resolves an error the agent has not reported for an hour, and a second run changes nothing', async () => {
    const [xid, bus] = await errorsOf()
    await advance(app, 30 * 60)
    await report('xid_error', 'error', 'Xid 79 again')
    await advance(app, 31 * 60)
    expect(await evaluate(app)).toBe('0 incidents opened, 0 repeats counted, 1 resolved, 0 linked to new notifications')
    const resolved = await alert(app, asMember(owner), bus!.id)
    expect(resolved).toMatchObject({ state: 'resolved', resolved_by: null, resolution: 'not reported again for 60 minutes' })
    // Reported 31 minutes ago: still open.
    expect((await alert(app, asMember(owner), xid!.id)).state).toBe('open')
    expect(await evaluate(app)).toBe(NOTHING_CHANGED)
    expect(await alert(app, asMember(owner), bus!.id)).toEqual(resolved)
  })

  test('the error reported again after its incident was resolved opens a new incident', async () => {
    await report('gpu_fell_off_bus', 'error', 'GPU 1 fell off the bus, once more')
    const bus = (await errorsOf()).filter((i) => i.cause_key.endsWith('agent.gpu_fell_off_bus'))
    expect(bus.map((i) => [i.state, i.occurrences])).toEqual([
      ['open', 1],
      ['resolved', 3],
    ])
  })
})
