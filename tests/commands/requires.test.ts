import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { commandFrame, commandWhen, framesAbout, getCommand, issue, offlineServer, onlineServer, report, timeline } from '../support/commands'
import { api, getServer, newOwner, ok, RawAgent, stopApp, type Owner } from '../support/fleet'

/** requires (none, idle, after_rental) against the server's rental fact, set by the operator or reported by the agent. */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'requires', 'pro')
})
afterAll(() => stopApp(app))

async function setRental(serverId: string, active: boolean) {
  const server = await ok(await api(app, owner, 'PATCH', `/servers/${serverId}`, { json: { rental_active: active } }))
  expect(server.rental_active).toBe(active)
}

describe('a dangerous command during an active rental', () => {
  test('defaults to after_rental, waits with awaiting_rental_end, and is delivered when the operator ends the rental', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    await setRental(server_id, true)
    const c = await issue(app, owner, server_id, 'gpu.reset', { gpu_index: 1 })
    expect(c).toMatchObject({ requires: 'after_rental', delivery_status: 'queued', queue_reason: 'awaiting_rental_end', sent_at: null })
    await agent.barrier()
    expect(framesAbout(agent, 'command', c.command_id)).toEqual([])

    await setRental(server_id, false)
    const frame = await commandFrame(agent, c.command_id)
    expect(frame).toMatchObject({ command_type: 'gpu.reset', requires: 'after_rental', params: { gpu_index: 1 } })
    expect(await getCommand(app, owner, c.command_id)).toMatchObject({ delivery_status: 'sent', queue_reason: null })
    const t = await timeline(app, owner, c.command_id)
    expect(t[0]).toMatchObject({ axis: 'command', to: 'created', note: 'awaiting_rental_end' })
    await agent.close()
  })

  test('reboot waits for the rental the agent reported (event rental.started) and goes when the agent reports rental.ended', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    agent.event('rental.started', 'info', 'a renter took the machine', { marketplace: 'marketplace_a' })
    await agent.barrier()
    expect((await getServer(app, owner, server_id)).rental_active).toBe(true)

    const c = await issue(app, owner, server_id, 'reboot')
    expect(c).toMatchObject({ requires: 'after_rental', queue_reason: 'awaiting_rental_end' })
    agent.event('rental.ended', 'info', 'the rental ended')
    await commandFrame(agent, c.command_id)
    expect((await getServer(app, owner, server_id)).rental_active).toBe(false)
    expect((await getCommand(app, owner, c.command_id)).delivery_status).toBe('sent')
    await agent.close()
  })

  test('waits for the rental to end, then for the agent, when the server is also offline', async () => {
    const { server_id, agent_token } = await offlineServer(app, owner)
    await setRental(server_id, true)
    const c = await issue(app, owner, server_id, 'reboot')
    expect(c.queue_reason).toBe('awaiting_rental_end')
    await setRental(server_id, false)
    expect(await getCommand(app, owner, c.command_id)).toMatchObject({ delivery_status: 'queued', queue_reason: 'server_offline' })
    const { agent } = await RawAgent.start(app, agent_token)
    await commandFrame(agent, c.command_id)
    await agent.close()
  })

  test('an explicit requires none is honoured and the command goes at once', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    await setRental(server_id, true)
    const c = await issue(app, owner, server_id, 'reboot', {}, { requires: 'none' })
    expect(c).toMatchObject({ requires: 'none', delivery_status: 'sent' })
    await commandFrame(agent, c.command_id)
    await agent.close()
  })
})

describe('other commands', () => {
  test('a non-dangerous type during a rental is delivered at once', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    await setRental(server_id, true)
    for (const [type, params] of [
      ['diagnostics.run', {}],
      ['gpu.set_power_limit', { gpu_index: 0, watts: 200 }],
      ['agent.update', { version: '1.6.0' }],
    ] as const) {
      const c = await issue(app, owner, server_id, type, params)
      expect(c).toMatchObject({ requires: 'none', delivery_status: 'sent', queue_reason: null })
      await commandFrame(agent, c.command_id)
    }
    await agent.close()
  })

  test('a dangerous type with no rental defaults to requires none and goes at once', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id, 'gpu.reset', { gpu_index: 0 })
    expect(c).toMatchObject({ requires: 'none', delivery_status: 'sent' })
    await commandFrame(agent, c.command_id)
    await agent.close()
  })

  test('requires idle waits with awaiting_idle while a rental runs and goes when the server is idle', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    await setRental(server_id, true)
    const c = await issue(app, owner, server_id, 'diagnostics.run', {}, { requires: 'idle' })
    expect(c).toMatchObject({ requires: 'idle', delivery_status: 'queued', queue_reason: 'awaiting_idle' })
    await agent.barrier()
    expect(framesAbout(agent, 'command', c.command_id)).toEqual([])
    agent.event('rental.ended', 'info', 'idle again')
    const frame = await commandFrame(agent, c.command_id)
    expect(frame.requires).toBe('idle')
    await commandWhen(app, owner, c.command_id, (x) => x.delivery_status === 'sent')
    await agent.close()
  })

  test('requires idle on an idle server goes at once', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id, 'agent.restart', {}, { requires: 'idle' })
    expect(c).toMatchObject({ requires: 'idle', delivery_status: 'sent' })
    await commandFrame(agent, c.command_id)
    expect(await report(agent, { type: 'command.accepted', command_id: c.command_id })).toEqual([])
    await agent.close()
  })

  test('a waiting command does not go when the agent reconnects during the rental', async () => {
    const { server_id, agent_token, agent } = await onlineServer(app, owner)
    await setRental(server_id, true)
    const c = await issue(app, owner, server_id, 'gpu.reset', { gpu_index: 0 })
    await agent.close()
    const { agent: back } = await RawAgent.start(app, agent_token)
    await back.barrier()
    expect(framesAbout(back, 'command', c.command_id)).toEqual([])
    expect(await getCommand(app, owner, c.command_id)).toMatchObject({ delivery_status: 'queued', queue_reason: 'awaiting_rental_end' })
    await back.close()
  })
})
