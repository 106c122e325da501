import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { onlineServer } from '../support/commands'
import { api, closeAllAgents, newOwner, ok, type Owner, type RawAgent } from '../support/fleet'

/**
 * Issue 19, the `temp` producer from real telemetry: an agent reports a GPU at 90 °C; nothing is
 * notified until the reading has stayed at or above 85 °C for two minutes; then exactly once, even
 * while it hovers between 80 and 85 °C; only after it cools below 80 °C does a new stretch notify
 * again. The readings arrive as telemetry frames over the agent's WebSocket and are flushed by the
 * metrics.rollup job, which then watches them.
 */

let app: TestApp
let owner: Owner
let agent: RawAgent

beforeAll(async () => {
  app = await startTestApp()
  owner = await newOwner(app, 'temp', 'pro')
  ;({ agent } = await onlineServer(app, owner))
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
})

const nowIso = () => new Date(app.deps.clock.nowUs() / 1000).toISOString()
async function reading(celsius: number): Promise<void> {
  agent.telemetry({ 0: { temperature_c: celsius }, 1: { temperature_c: 60 } }, undefined, nowIso())
  await agent.barrier()
  const run = await ok<{ outcome: string; detail: string }>(app.fetch('/api/v1/_test/jobs/metrics.rollup/run', { method: 'POST' }))
  expect(run.outcome).toBe('succeeded')
}
const advance = (seconds: number) => ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
const temps = async () =>
  (
    await ok<{ items: { category: string; title: string; body: string; critical: boolean }[] }>(await api(app, owner, 'GET', '/notifications/history?limit=50'))
  ).items.filter((i) => i.category === 'temp')

describe('GPU temperature', () => {
  test('a hot reading is not notified before it has lasted two minutes', async () => {
    await reading(90)
    expect(await temps()).toEqual([])
    await advance(60)
    await reading(91)
    expect(await temps()).toEqual([])
  })

  test('after two minutes at or above 85 °C: one critical notification naming the GPU', async () => {
    await advance(75)
    await reading(92)
    const t = await temps()
    expect(t).toHaveLength(1)
    expect(t[0]).toMatchObject({ critical: true })
    expect(t[0]!.title).toContain('GPU 0 hot')
    expect(t[0]!.body).toContain('92 °C')
  })

  test('hovering between the marks, or staying hot, notifies nothing more (hysteresis)', async () => {
    for (const c of [83, 86, 82, 95]) {
      await advance(180)
      await reading(c)
    }
    expect(await temps()).toHaveLength(1)
  })

  test('cooling below 80 °C re-arms it: a new hot stretch is notified again after its delay', async () => {
    await advance(60)
    await reading(75)
    await advance(60)
    await reading(88)
    expect(await temps()).toHaveLength(1)
    await advance(150)
    await reading(89)
    expect(await temps()).toHaveLength(2)
  })

  test('the cool GPU of the same server never notifies', async () => {
    expect((await temps()).every((t) => t.title.includes('GPU 0'))).toBe(true)
  })
})
