import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { addMember, auditRows, call, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { onlineServer } from '../support/commands'
import { api, closeAllAgents, newOwner, ok, RawAgent, type Owner } from '../support/fleet'
import { startTelegram, type FakeTelegram } from '../support/telegram'
import { acknowledge, alert, alerts, asMember, resolve, runJob, waitFor } from './support'

/**
 * Issue 21, alerts "Done when": an incident's life from the first event through acknowledgement to
 * resolution, over real HTTP and a real agent WebSocket. The agent's session closes: the server goes
 * offline, which opens one critical incident and produces one offline notification (sent to a fake
 * Telegram), linked to the incident. An operator acknowledges it; the agent reconnects and its first
 * heartbeat brings the server online, which resolves it.
 */

const TOKEN = '212121:AAE-gpuhq-alerts-token-1234567890'
const CHAT = 61_000_212

let tg: FakeTelegram
let app: TestApp
let owner: Owner
let operator: Member

const offlineOf = async (serverId: string) => alerts(app, asMember(owner), { kind: 'offline', server_id: serverId })
const nameOf = async (serverId: string) => (await ok<{ name: string }>(await api(app, owner, 'GET', `/servers/${serverId}`))).name

/** Brings a new enrolled server online (a heartbeat on a live session) and answers its agent. */
async function heartbeating() {
  const s = await onlineServer(app, owner)
  s.agent.heartbeat()
  await s.agent.barrier()
  return s
}

beforeAll(async () => {
  tg = await startTelegram({ token: TOKEN })
  app = await startTestApp({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_URL: tg.url })
  owner = await newOwner(app, 'alerts-life', 'pro')
  operator = await addMember(app, owner.tenantId, 'operator')
  const { code } = await ok<{ code: string }>(await api(app, owner, 'POST', '/notifications/chat/link'), 201)
  tg.userSends({ id: CHAT, first_name: 'Ops' }, code)
  await runJob(app, 'notifications.dispatch')
  tg.sent.splice(0)
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
  await tg.close()
})

describe("an incident's life", () => {
  test('a closed agent session opens one offline incident linked to its notification; an operator acknowledges it; the reconnected agent resolves it', async () => {
    const { server_id, agent_token, agent } = await heartbeating()
    const name = await nameOf(server_id)
    expect(await offlineOf(server_id)).toEqual([])

    await agent.close()
    const [opened] = await waitFor(async () => ((await offlineOf(server_id)).length ? offlineOf(server_id) : null), 'the offline incident')
    expect(opened).toMatchObject({
      kind: 'offline',
      cause_key: `offline:${server_id}`,
      severity: 'critical',
      state: 'open',
      server_id,
      marketplace: null,
      title: `Server offline: ${name}`,
      occurrences: 1,
      acknowledged_at: null,
      resolved_at: null,
    })
    expect(opened!.detail).toStartWith('offline:')

    // The notification the same transition produced is the one linked, and it reached the chat.
    const history = (await ok<{ items: { id: string; title: string }[] }>(await api(app, owner, 'GET', '/notifications/history?limit=50'))).items
    const notified = history.filter((n) => n.title === `Server offline: ${name}`)
    expect(notified).toHaveLength(1)
    expect(opened!.notifications).toEqual([{ id: notified[0]!.id, category: 'offline', title: `Server offline: ${name}`, created_at: expect.any(String) }])
    await runJob(app, 'notifications.dispatch')
    expect(tg.sent.filter((m) => m.text.startsWith(`Server offline: ${name}`))).toHaveLength(1)

    const acked = await acknowledge(app, operator, opened!.id)
    expect(acked).toMatchObject({ state: 'acknowledged', acknowledged_by: operator.userId, resolved_at: null })
    expect(acked.acknowledged_at).not.toBeNull()
    // Acknowledging again answers it unchanged.
    expect(await acknowledge(app, operator, opened!.id)).toEqual(acked)
    const audit = await auditRows(app, asMember(owner), { operation: 'alerts.acknowledge' })
    expect(audit.map((r) => [r.actor.id, r.target, r.outcome])).toEqual([
      [operator.userId, { kind: 'alert_incident', id: opened!.id }, 'succeeded'],
      [operator.userId, { kind: 'alert_incident', id: opened!.id }, 'succeeded'],
    ])

    const back = await RawAgent.start(app, agent_token)
    back.agent.heartbeat()
    await back.agent.barrier()
    const resolved = await waitFor(async () => {
      const i = await alert(app, operator, opened!.id)
      return i.state === 'resolved' ? i : null
    }, 'the resolution')
    expect(resolved).toMatchObject({
      resolved_by: null,
      resolution: 'the server is back online',
      acknowledged_at: acked.acknowledged_at,
      acknowledged_by: operator.userId,
      occurrences: 1,
      notifications: opened!.notifications,
    })
    // Resolved is final for acknowledging (409); resolving it again answers it unchanged.
    const late = await call(app, 'POST', `/alerts/${opened!.id}/acknowledge`, operator)
    expect(late.status).toBe(409)
    expect(((await late.json()) as { code: string }).code).toBe('conflict')
    expect(await resolve(app, operator, opened!.id)).toEqual(resolved)
    expect(await alerts(app, operator, { state: 'unresolved', server_id })).toEqual([])
    await back.agent.close()
  })

  test('a session that opens and closes again without a heartbeat leaves the offline server with one incident', async () => {
    const { server_id, agent_token, agent } = await heartbeating()
    await agent.close()
    await waitFor(async () => ((await offlineOf(server_id)).length ? true : null), 'the offline incident')
    const again = await RawAgent.start(app, agent_token)
    await again.agent.close()
    const list = await offlineOf(server_id)
    expect(list.map((i) => [i.state, i.occurrences])).toEqual([['open', 1]])
  })

  test('a server that drops again soon after coming back opens a second incident, which links no notification: the notifier grouped that drop into the first', async () => {
    const { server_id, agent_token, agent } = await heartbeating()
    await agent.close()
    const first = (await waitFor(async () => ((await offlineOf(server_id)).length ? offlineOf(server_id) : null), 'the first incident'))[0]!
    const back = await RawAgent.start(app, agent_token)
    back.agent.heartbeat()
    await back.agent.barrier()
    await waitFor(async () => ((await alert(app, operator, first.id)).state === 'resolved' ? true : null), 'the first resolution')
    await back.agent.close()
    const list = await waitFor(async () => {
      const l = await offlineOf(server_id)
      return l.length === 2 ? l : null
    }, 'the second incident')
    expect(list.map((i) => [i.state, i.notifications.length])).toEqual([
      ['open', 0],
      ['resolved', 1],
    ])
  })

  test('decommissioning a server resolves its unresolved incidents', async () => {
    const { server_id, agent } = await heartbeating()
    await agent.close()
    const [open] = await waitFor(async () => ((await offlineOf(server_id)).length ? offlineOf(server_id) : null), 'the offline incident')
    await ok(await api(app, owner, 'POST', `/servers/${server_id}/decommission`))
    expect(await alert(app, operator, open!.id)).toMatchObject({ state: 'resolved', resolution: 'the server was decommissioned', resolved_by: null })
  })
})
