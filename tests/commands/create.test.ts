import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import { cancelCommand, commandFrame, inSeconds, issue, offlineServer, onlineServer, postCommand, report, rows } from '../support/commands'
import { api, newOwner, ok, stopApp, type Owner } from '../support/fleet'
import { expectProblem } from '../support/problem'

/** POST /commands: the catalogue, validation, defaults, Idempotency-Key and the per-server queue limits. */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'create', 'pro')
})
afterAll(() => stopApp(app))

const MINIMUM: [string, Record<string, unknown>, boolean][] = [
  ['diagnostics.run', {}, false],
  ['agent.restart', {}, false],
  ['agent.update', { version: '1.5.2' }, false],
  ['gpu.set_power_limit', { gpu_index: null, watts: 1000 }, false],
  ['gpu.set_power_limit', { gpu_index: 3, watts: 50 }, false],
  ['gpu.reset', { gpu_index: 0 }, true],
  ['reboot', {}, true],
]

describe('the catalogue', () => {
  test("GET /commands/catalogue lists at least the protocol's minimum catalogue with schema_version, dangerous flag and params schema", async () => {
    const { items } = await ok<{ items: Record<string, any>[] }>(await api(app, owner, 'GET', '/commands/catalogue'))
    for (const [type, , dangerous] of MINIMUM) {
      const entry = items.find((i) => i.type === type)
      expect(entry).toBeDefined()
      expect(entry).toMatchObject({ dangerous, schema_version: 1 })
      expect(entry!.params.type).toBe('object')
      expect(typeof entry!.description).toBe('string')
    }
    expect(items.find((i) => i.type === 'gpu.set_power_limit')!.params.properties.watts).toMatchObject({ minimum: 50, maximum: 1000 })
  })

  test('every type of the minimum catalogue is accepted with valid params', async () => {
    const { server_id } = await offlineServer(app, owner)
    for (const [type, params] of MINIMUM) {
      const c = await issue(app, owner, server_id, type, params)
      expect(c).toMatchObject({ type, params, schema_version: 1, delivery_status: 'queued' })
    }
  })

  test('an unknown type answers 422 with /type unknown_command_type and stores nothing', async () => {
    const { server_id } = await offlineServer(app, owner)
    const p = await expectProblem(await postCommand(app, owner, { server_id, type: 'gpu.overclock', params: {} }), 422, 'validation_failed')
    expect(p.errors).toEqual([{ path: '/type', code: 'unknown_command_type' }])
    const bad = await expectProblem(await postCommand(app, owner, { server_id, type: 'Reboot!', params: {} }), 422, 'validation_failed')
    expect(bad.errors!.map((e) => e.path)).toContain('/type')
    expect(await rows(app, sql`SELECT id FROM commands WHERE server_id = ${server_id}`)).toEqual([])
  })

  test('bad params answer 422 with pointers under /params', async () => {
    const { server_id } = await offlineServer(app, owner)
    const cases: [string, Record<string, unknown>, string][] = [
      ['agent.update', {}, '/params/version'],
      ['agent.update', { version: 'latest' }, '/params/version'],
      ['gpu.set_power_limit', { gpu_index: 0, watts: 20 }, '/params/watts'],
      ['gpu.set_power_limit', { gpu_index: 0, watts: 1001 }, '/params/watts'],
      ['gpu.set_power_limit', { watts: 300 }, '/params/gpu_index'],
      ['gpu.set_power_limit', { gpu_index: 0, watts: 300.5 }, '/params/watts'],
      ['gpu.reset', { gpu_index: '0' }, '/params/gpu_index'],
      ['gpu.reset', { gpu_index: -1 }, '/params/gpu_index'],
    ]
    for (const [type, params, path] of cases) {
      const p = await expectProblem(await postCommand(app, owner, { server_id, type, params }), 422, 'validation_failed')
      expect({ type, params, paths: p.errors!.map((e) => e.path) }).toEqual({ type, params, paths: expect.arrayContaining([path]) })
    }
    const extra = await expectProblem(await postCommand(app, owner, { server_id, type: 'reboot', params: { force: true } }), 422, 'validation_failed')
    for (const e of extra.errors!) expect(e.path.startsWith('/params')).toBe(true)
    expect(await rows(app, sql`SELECT id FROM commands WHERE server_id = ${server_id}`)).toEqual([])
  })
})

describe('accept_by and deadline', () => {
  test('default to 24 hours from now and one hour after accept_by', async () => {
    const { server_id } = await offlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    const created = Date.parse(c.created_at)
    expect(Date.parse(c.accept_by) - created).toBe(24 * 3600 * 1000)
    expect(Date.parse(c.deadline) - Date.parse(c.accept_by)).toBe(3600 * 1000)
    const only = await issue(app, owner, server_id, 'reboot', {}, { accept_by: inSeconds(app, 600) })
    expect(Date.parse(only.deadline) - Date.parse(only.accept_by)).toBe(3600 * 1000)
  })

  test('are refused when in the past, out of order or more than 30 days ahead', async () => {
    const { server_id } = await offlineServer(app, owner)
    const cases: [Record<string, unknown>, string][] = [
      [{ accept_by: inSeconds(app, -5) }, '/accept_by'],
      [{ accept_by: inSeconds(app, 600), deadline: inSeconds(app, 300) }, '/deadline'],
      [{ deadline: inSeconds(app, 31 * 86400) }, '/deadline'],
      [{ accept_by: 'tomorrow' }, '/accept_by'],
    ]
    for (const [extra, path] of cases) {
      const p = await expectProblem(await postCommand(app, owner, { server_id, type: 'reboot', params: {}, ...extra }), 422, 'validation_failed')
      expect(p.errors!.map((e) => e.path)).toContain(path)
    }
    const far = await issue(app, owner, server_id, 'reboot', {}, { accept_by: inSeconds(app, 86400), deadline: inSeconds(app, 29 * 86400) })
    expect(far.deadline).toBeDefined()
  })
})

describe('Idempotency-Key', () => {
  test('the same key and body answer the same command and create one row', async () => {
    const { server_id } = await offlineServer(app, owner)
    const body = { server_id, type: 'gpu.set_power_limit', params: { gpu_index: 1, watts: 320 } }
    const key = `cmd-${crypto.randomUUID()}`
    const first = await ok(await postCommand(app, owner, body, { 'idempotency-key': key }), 201)
    expect(first.idempotency_key).toBe(key)
    const again = await ok(await postCommand(app, owner, { params: { watts: 320, gpu_index: 1 }, type: body.type, server_id }, { 'idempotency-key': key }), 201)
    expect(again.command_id).toBe(first.command_id)
    expect(await rows(app, sql`SELECT id FROM commands WHERE idempotency_key = ${key}`)).toHaveLength(1)
    expect(await rows(app, sql`SELECT id FROM commands WHERE server_id = ${server_id}`)).toHaveLength(1)
  })

  test('the same key with another body answers 409 idempotency_conflict', async () => {
    const { server_id } = await offlineServer(app, owner)
    const key = `cmd-${crypto.randomUUID()}`
    await ok(await postCommand(app, owner, { server_id, type: 'gpu.reset', params: { gpu_index: 0 } }, { 'idempotency-key': key }), 201)
    await expectProblem(
      await postCommand(app, owner, { server_id, type: 'gpu.reset', params: { gpu_index: 1 } }, { 'idempotency-key': key }),
      409,
      'idempotency_conflict',
    )
    expect(await rows(app, sql`SELECT id FROM commands WHERE server_id = ${server_id}`)).toHaveLength(1)
    // A key over 128 characters is refused.
    await expectProblem(
      await postCommand(app, owner, { server_id, type: 'reboot', params: {} }, { 'idempotency-key': 'k'.repeat(129) }),
      422,
      'validation_failed',
    )
  })
})

describe('queue limits', () => {
  test('an offline server holds 50 undelivered commands, then answers 409 offline_queue_full', async () => {
    const { server_id } = await offlineServer(app, owner)
    const made: string[] = []
    for (let i = 0; i < 50; i++) made.push((await issue(app, owner, server_id)).command_id)
    const full = await expectProblem(await postCommand(app, owner, { server_id, type: 'diagnostics.run', params: {} }), 409, 'offline_queue_full')
    expect(full.detail).toContain('50')
    expect(await rows(app, sql`SELECT id FROM commands WHERE server_id = ${server_id}`)).toHaveLength(50)
    // A cancelled command leaves the queue and frees its place.
    await ok(await cancelCommand(app, owner, made[0]!))
    await issue(app, owner, server_id)
    await expectProblem(await postCommand(app, owner, { server_id, type: 'diagnostics.run', params: {} }), 409, 'offline_queue_full')
  })

  test('an online server whose agent never accepts holds 50, then answers 409 online_queue_full; an accept frees a place', async () => {
    const { server_id, agent } = await onlineServer(app, owner)
    const made: string[] = []
    for (let i = 0; i < 50; i++) made.push((await issue(app, owner, server_id)).command_id)
    await commandFrame(agent, made[49]!)
    await expectProblem(await postCommand(app, owner, { server_id, type: 'diagnostics.run', params: {} }), 409, 'online_queue_full')
    expect(await report(agent, { type: 'command.accepted', command_id: made[0]! })).toEqual([])
    await issue(app, owner, server_id)
    await expectProblem(await postCommand(app, owner, { server_id, type: 'diagnostics.run', params: {} }), 409, 'online_queue_full')
    await agent.close()
  })
})
