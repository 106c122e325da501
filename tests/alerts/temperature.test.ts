import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { onlineServer } from '../support/commands'
import { api, closeAllAgents, newOwner, ok, type Owner, type RawAgent } from '../support/fleet'
import { advance, alerts, asMember, evaluate, NOTHING_CHANGED, resolve, runJob } from './support'

/**
 * Issue 21, the `temperature` cause: a GPU whose latest reading is at or above the notifier's high
 * mark (85 °C) opens one critical incident for that GPU at the next alerts.evaluate; a newer hot
 * reading is a repeat; it stays open between the marks and resolves below the low mark (80 °C). The
 * `temp` notification, produced after two hot minutes by the metrics.rollup job, is linked when it
 * comes. Readings arrive as telemetry frames over the agent's WebSocket.
 */

let app: TestApp
let owner: Owner
let agent: RawAgent
let serverId: string
let name: string

const hot = () => alerts(app, asMember(owner), { kind: 'temperature' })
const nowIso = () => new Date(app.deps.clock.nowUs() / 1000).toISOString()
async function reading(celsius: number): Promise<void> {
  agent.telemetry({ 0: { temperature_c: celsius }, 1: { temperature_c: 60 } }, undefined, nowIso())
  await agent.barrier()
  await runJob(app, 'metrics.rollup')
}

beforeAll(async () => {
  app = await startTestApp()
  owner = await newOwner(app, 'alerts-temp', 'pro')
  ;({ agent, server_id: serverId } = await onlineServer(app, owner))
  name = (await ok<{ name: string }>(await api(app, owner, 'GET', `/servers/${serverId}`))).name
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
})

describe('GPU temperature', () => {
  test('a GPU reading 85 °C or more opens one critical incident for that GPU at the next evaluation', async () => {
    await reading(90)
    expect(await hot()).toEqual([])
    expect(await evaluate(app)).toStartWith('1 incidents opened')
    const list = await hot()
    expect(list).toHaveLength(1)
    expect(list[0]).toMatchObject({
      cause_key: `temperature:${serverId}:0`,
      severity: 'critical',
      state: 'open',
      server_id: serverId,
      title: `GPU 0 hot: ${name}`,
      occurrences: 1,
      notifications: [],
    })
    expect(list[0]!.detail).toContain('reads 90 °C')
  })

  test('evaluating the same reading again changes nothing', async () => {
    const before = await hot()
    expect(await evaluate(app)).toBe(NOTHING_CHANGED)
    expect(await hot()).toEqual(before)
  })

  test('newer hot readings are repeats; the temp notification of two hot minutes is linked when it comes', async () => {
    await advance(app, 60)
    await reading(91)
    await evaluate(app)
    expect((await hot()).map((i) => [i.occurrences, i.notifications.length])).toEqual([[2, 0]])
    await advance(app, 75)
    await reading(92)
    expect(await evaluate(app)).toBe('0 incidents opened, 1 repeats counted, 0 resolved, 0 linked to new notifications')
    const [i] = await hot()
    expect(i).toMatchObject({ occurrences: 3 })
    expect(i!.detail).toContain('reads 92 °C')
    expect(i!.notifications.map((n) => [n.category, n.title])).toEqual([['temp', `GPU 0 hot: ${name}`]])
  })

  test('between the marks it stays open; a reading below 80 °C resolves it', async () => {
    await advance(app, 60)
    await reading(83)
    expect(await evaluate(app)).toBe(NOTHING_CHANGED)
    expect((await hot()).map((i) => [i.state, i.occurrences])).toEqual([['open', 3]])
    await advance(app, 60)
    await reading(75)
    await evaluate(app)
    const [i] = await hot()
    expect(i).toMatchObject({ state: 'resolved', resolved_by: null, resolution: 'GPU 0 reads 75 °C, below 80 °C', occurrences: 3 })
    expect(i!.notifications).toHaveLength(1)
    expect(await evaluate(app)).toBe(NOTHING_CHANGED)
  })

  test('hot again opens a new incident, which does not take over the earlier notification', async () => {
    await advance(app, 60)
    await reading(88)
    await evaluate(app)
    expect((await hot()).map((i) => [i.state, i.notifications.length])).toEqual([
      ['open', 0],
      ['resolved', 1],
    ])
  })

  test('resolved by a member while still hot, it stays resolved until a newer hot reading', async () => {
    const [open] = await hot()
    const done = await resolve(app, asMember(owner), open!.id, { note: 'fans replaced, cooling down' })
    expect(done).toMatchObject({ state: 'resolved', resolved_by: owner.userId, resolution: 'fans replaced, cooling down' })
    expect(await evaluate(app)).toBe(NOTHING_CHANGED)
    expect((await hot()).filter((i) => i.state !== 'resolved')).toEqual([])
    await advance(app, 30)
    await reading(87)
    await evaluate(app)
    expect((await hot()).map((i) => i.state)).toEqual(['open', 'resolved', 'resolved'])
  })
})
