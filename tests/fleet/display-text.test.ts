import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { api, enrolAgent, getServer, httpsHello, newOwner, ok, RawAgent, stopApp, type Owner } from '../support/fleet'
import { expectProblem } from '../support/problem'

/**
 * Names people read refuse control and bidi characters (a U+202E right-to-left override turns
 * "rig-exe.txt" into "rig-txt.exe" on screen); what an agent reports is kept with them stripped.
 */

let app: TestApp
let owner: Owner
let serverId: string
let groupId: string
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent', SIGNUP_ENABLED: 'true' })
  owner = await newOwner(app, 'names', 'pro')
  serverId = (await enrolAgent(app, owner)).server_id
  groupId = (await ok<{ id: string }>(await api(app, owner, 'POST', '/groups', { json: { name: 'Frankfurt' } }), 201)).id
})
afterAll(() => stopApp(app))

const UNSAFE = [
  ['U+202E right-to-left override', 'rig\u202Eexe.txt'],
  ['U+2066 left-to-right isolate', 'rig\u2066x'],
  ['U+200F right-to-left mark', 'rig\u200F'],
  ['U+061C Arabic letter mark', 'rig\u061C'],
  ['a NUL', 'rig\u0000'],
  ['an escape (ANSI colours)', '\u001b[31mrig'],
  ['a line feed', 'rig\nrack'],
  ['a C1 control (U+0085)', 'rig\u0085'],
  ['DEL', 'rig\u007f'],
] as const

// [field, method, path, body, pointer]; a nullable field reports its union as invalid_value; a NUL,
// which no database stores, is refused before validation as invalid_character (docs/conventions.md).
const FIELDS: [string, string, () => string, (v: string) => unknown, string][] = [
  ['server name', 'PATCH', () => `/servers/${serverId}`, (v) => ({ name: v }), '/name'],
  ['a tag value', 'PATCH', () => `/servers/${serverId}`, (v) => ({ tags: [`site:${v}`] }), '/tags/0'],
  ['a maintenance reason', 'PUT', () => `/servers/${serverId}/maintenance`, (v) => ({ reason: v }), '/reason'],
  ['a new group name', 'POST', () => '/groups', (v) => ({ name: v }), '/name'],
  ['a group rename', 'PATCH', () => `/groups/${groupId}`, (v) => ({ name: v }), '/name'],
  ['a token name', 'POST', () => '/tokens', (v) => ({ name: v }), '/name'],
  ['a display name', 'PATCH', () => '/me', (v) => ({ display_name: v }), '/display_name'],
]

describe('names set through the API', () => {
  for (const [field, method, path, body, pointer] of FIELDS)
    test.each(UNSAFE)(`${field} with %s answers 422 on that field`, async (_what, value) => {
      const problem = await expectProblem(await api(app, owner, method, path(), { json: body(value) }), 422, 'validation_failed')
      expect(problem.errors?.[0]).toEqual({ path: pointer, code: expect.stringMatching(/^(pattern|invalid_value|invalid_character)$/) })
    })

  test('the tenant name at signup refuses them too', async () => {
    const res = await app.fetch('/api/v1/auth/signup/start', { method: 'POST', json: { email: 'x@example.com', tenant_name: 'Acme\u202Egnp.exe' } })
    const problem = await expectProblem(res, 422, 'validation_failed')
    expect(problem.errors).toEqual([{ path: '/tenant_name', code: 'pattern' }])
  })

  test('ordinary names in any script, with spaces and punctuation, are still accepted', async () => {
    for (const name of ['Rig 7 — Frankfurt', 'Серверная №2', 'مزرعة ١', '東京ラック', "O'Brien's rig"]) {
      const row = await ok<{ name: string }>(await api(app, owner, 'PATCH', `/servers/${serverId}`, { json: { name } }))
      expect(row.name).toBe(name)
    }
    await ok(await api(app, owner, 'PATCH', `/servers/${serverId}`, { json: { tags: ['site:fra-1', 'owner:zoë'] } }))
  })
})

describe('what an agent reports', () => {
  test('enrolment stores the hostname, and names a new server, without control or bidi characters', async () => {
    const e = await enrolAgent(app, owner, { hostname: 'rig\u202E-07\u0007', gpus: [{ index: 0, model: 'RTX\u001b[0m 4090', uuid: 'GPU-\u2066x' }] })
    const server = await getServer(app, owner, e.server_id)
    expect(server).toMatchObject({ name: 'rig-07', hostname: 'rig-07', gpu_model: 'RTX[0m 4090' })
    expect(server.gpus[0]).toMatchObject({ model: 'RTX[0m 4090', uuid: 'GPU-x' })
  })

  test('the HTTPS hello and the session hello strip them too; line breaks become spaces', async () => {
    const e = await enrolAgent(app, owner)
    expect((await httpsHello(app, e.agent_token, { hostname: 'hello\u202Ehost', port_range: '40000-\u200F40100' })).status).toBe(204)
    expect(await getServer(app, owner, e.server_id)).toMatchObject({ hostname: 'hellohost', port_range: '40000-40100' })
    const { agent } = await RawAgent.start(app, e.agent_token, { hostname: 'ws\nhost\u2069' })
    expect((await getServer(app, owner, e.server_id)).hostname).toBe('ws host')
    await agent.close()
  })

  test('a hostname made only of such characters still gives the server a name', async () => {
    const e = await enrolAgent(app, owner, { hostname: '\u202E\u0007' })
    expect((await getServer(app, owner, e.server_id)).name).toBe('unnamed')
  })

  test('an event message from the agent is stored stripped', async () => {
    const e = await enrolAgent(app, owner)
    const { agent } = await RawAgent.start(app, e.agent_token)
    agent.event('driver_error', 'error', 'Xid 79\u202E on GPU 1\r\nreset needed\u0000')
    await agent.barrier()
    const page = await ok<{ items: { message: string }[] }>(await api(app, owner, 'GET', `/servers/${e.server_id}/events?kind=agent.driver_error`))
    expect(page.items.map((i) => i.message)).toEqual(['Xid 79 on GPU 1 reset needed'])
    await agent.close()
  })
})
