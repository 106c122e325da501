import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { withTransaction } from '../../db/client'
import { liveEventTypes } from '../../src/modules/live'
import { setMarketRentals } from '../../src/modules/fleet'
import { call } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { closeAllClients, LiveClient } from '../support/events'
import { enrolAgent, newOwner, RawAgent, stopApp, type Owner } from '../support/fleet'

/**
 * Issue 23, "Live events": the event catalogue, each from where the change really happens: rentals
 * (the operator's fact, the agent's report, a marketplace's), alert incidents opened, acknowledged
 * and resolved, a command cancelled; and every type the stream can send is documented.
 */

let app: TestApp
let owner: Owner & { role: 'owner' }
let client: LiveClient
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = { ...(await newOwner(app, 'live-catalogue', 'pro')), role: 'owner' }
  client = await LiveClient.open(app, { cookie: owner.session })
})
afterAll(async () => {
  closeAllClients()
  await stopApp(app)
})

describe('rentals', () => {
  test("started and ended by the operator's fact, the agent's report and a marketplace, each saying whether a rental still runs", async () => {
    const { server_id: server, agent_token } = await enrolAgent(app, owner)
    const patch = (rental_active: boolean) => call(app, 'PATCH', `/servers/${server}`, owner, { json: { rental_active } })
    expect((await patch(true)).status).toBe(200)
    // Saying it again is no change: no second event.
    expect((await patch(true)).status).toBe(200)
    await withTransaction(app.deps.db, (tx) => setMarketRentals(tx, app.deps, server, ['marketplace_a']))
    expect((await patch(false)).status).toBe(200)
    await withTransaction(app.deps.db, (tx) => setMarketRentals(tx, app.deps, server, []))
    const { agent } = await RawAgent.start(app, agent_token)
    agent.event('rental.started', 'info', 'a renter started a job')
    await agent.barrier()
    await client.waitFor((e) => e.type === 'rental.started' && e.data.source === 'agent')
    const rentals = client.changes().filter((e) => e.type.startsWith('rental.') && e.data.server_id === server)
    expect(rentals.map((e) => [e.type, e.data.source, e.data.rental_running])).toEqual([
      ['rental.started', 'operator', true],
      ['rental.started', 'marketplace_a', true],
      ['rental.ended', 'operator', true],
      ['rental.ended', 'marketplace_a', false],
      ['rental.started', 'agent', true],
    ])
    await agent.close()
  })
})

describe('alerts', () => {
  test('an offline server opens an incident; acknowledging and resolving it are told too', async () => {
    const { server_id: server, agent_token } = await enrolAgent(app, owner)
    const { agent } = await RawAgent.start(app, agent_token)
    agent.heartbeat()
    await client.waitFor((e) => e.type === 'presence.online' && e.data.server_id === server)
    await agent.close()
    const opened = await client.waitFor((e) => e.type === 'alert.opened' && e.data.server_id === server)
    expect(opened.data).toMatchObject({ kind: 'offline', severity: expect.any(String), server_id: server, by: null, resolution: null })
    const id = opened.data.alert_id as string
    expect((await call(app, 'POST', `/alerts/${id}/acknowledge`, owner)).status).toBe(200)
    const acked = await client.waitFor((e) => e.type === 'alert.acknowledged' && e.data.alert_id === id)
    expect(acked.data.by).toBe(owner.userId)
    expect((await call(app, 'POST', `/alerts/${id}/resolve`, owner, { json: { note: 'cable reseated' } })).status).toBe(200)
    const resolved = await client.waitFor((e) => e.type === 'alert.resolved' && e.data.alert_id === id)
    expect(resolved.data).toMatchObject({ by: owner.userId, resolution: 'cable reseated' })
  })
})

describe('commands', () => {
  test('a command cancelled before delivery', async () => {
    const { server_id: server } = await enrolAgent(app, owner)
    const res = await call(app, 'POST', '/commands', owner, { json: { server_id: server, type: 'diagnostics.run', params: {} } })
    const id = ((await res.json()) as { command_id: string }).command_id
    expect((await call(app, 'POST', `/commands/${id}/cancel`, owner)).status).toBe(200)
    const cancelled = await client.waitFor((e) => e.type === 'command.cancelled' && e.data.command_id === id)
    expect(cancelled.data).toMatchObject({ axis: 'execution', from: 'not_started', to: 'cancelled', execution_status: 'cancelled' })
  })
})

describe('the documentation', () => {
  test('docs/events.md names every event type the stream can send', () => {
    const doc = readFileSync(new URL('../../docs/events.md', import.meta.url), 'utf8')
    expect(liveEventTypes().filter((t) => !doc.includes(`\`${t}\``))).toEqual([])
  })
})
