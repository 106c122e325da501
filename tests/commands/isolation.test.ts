import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import { call, mintPat, type Member } from '../support/access'
import { commandFrame, getCommand, issue, offlineServer, onlineServer, postCommand, report, type CommandView } from '../support/commands'
import { api, newOwner, ok, stopApp, type Owner } from '../support/fleet'
import { expectProblem } from '../support/problem'

/** Tenant isolation and the server_allowlist caveat of a PAT on every command route. */

let app: TestApp
let owner: Owner
let stranger: Owner
let serverA: string
let serverB: string
let failed: CommandView
let queued: CommandView
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'isolated', 'pro')
  stranger = await newOwner(app, 'stranger', 'pro')
  const online = await onlineServer(app, owner)
  serverA = online.server_id
  serverB = (await offlineServer(app, owner)).server_id
  const c = await issue(app, owner, serverA)
  await commandFrame(online.agent, c.command_id)
  await report(
    online.agent,
    { type: 'command.accepted', command_id: c.command_id },
    { type: 'command.log', command_id: c.command_id, text: 'step 1' },
    { type: 'command.finished', command_id: c.command_id, status: 'failed', error: { code: 'broken', message: 'no', retryable: false } },
  )
  failed = await getCommand(app, owner, c.command_id)
  expect(failed.error.log_ref).toBeString()
  queued = await issue(app, owner, serverB, 'reboot')
})
afterAll(() => stopApp(app))

const asMember = (o: Owner): Member => ({ userId: o.userId, tenantId: o.tenantId, email: o.email, role: 'owner', session: o.session })

/** Every command route about one command, as [method, path]. */
const routesOf = (c: CommandView): [string, string][] => [
  ['GET', `/commands/${c.command_id}`],
  ['GET', `/commands/${c.command_id}/timeline`],
  ['GET', `/commands/${c.command_id}/logs/${c.error?.log_ref ?? '01890000-0000-7000-8000-000000000000'}`],
  ['POST', `/commands/${c.command_id}/cancel`],
]

describe('another tenant', () => {
  test('gets 404 for a command id of this tenant on every command route, and nothing changes', async () => {
    for (const c of [failed, queued])
      for (const [method, path] of routesOf(c)) {
        const p = await expectProblem(await api(app, stranger, method, path), 404, 'not_found')
        expect(p.detail ?? '').not.toContain(c.command_id)
      }
    expect(await getCommand(app, owner, queued.command_id)).toEqual(queued)
    // The log is still readable by its owner.
    await ok(await api(app, owner, 'GET', `/commands/${failed.command_id}/logs/${failed.error.log_ref}`))
  })

  test('gets 404 for the log of a command of this tenant whatever the log id looks like (a non-UUID was a 422 before the tenant check)', async () => {
    for (const logId of ['not-a-uuid', 'log_1', '0', 'x'.repeat(300), encodeURIComponent('..%2f'), failed.error.log_ref.toUpperCase()]) {
      const p = await expectProblem(await api(app, stranger, 'GET', `/commands/${failed.command_id}/logs/${logId}`), 404, 'not_found')
      expect(p.detail ?? '').not.toContain(failed.command_id)
      // The owner, with a log id that names no log of the command: the same 404.
      if (logId !== failed.error.log_ref.toUpperCase())
        await expectProblem(await api(app, owner, 'GET', `/commands/${failed.command_id}/logs/${logId}`), 404, 'not_found')
    }
  })

  test("sees none of these commands in GET /commands, even when filtering by this tenant's server", async () => {
    expect((await ok(await api(app, stranger, 'GET', '/commands'))).items).toEqual([])
    expect((await ok(await api(app, stranger, 'GET', `/commands?server_id=${serverA}`))).items).toEqual([])
  })

  test("gets 404 when creating a command for this tenant's server, and no row is written", async () => {
    const before = ((await app.deps.db.get(sql`SELECT count(*) AS n FROM commands`)) as { n: number }).n
    await expectProblem(await postCommand(app, stranger, { server_id: serverA, type: 'reboot', params: {} }), 404, 'not_found')
    await expectProblem(await postCommand(app, stranger, { server_id: crypto.randomUUID(), type: 'reboot', params: {} }), 404, 'not_found')
    expect(((await app.deps.db.get(sql`SELECT count(*) AS n FROM commands`)) as { n: number }).n).toBe(before)
  })

  test("its agent gets not_found for frames about this tenant's command", async () => {
    const theirs = await onlineServer(app, stranger)
    const err = await theirs.agent.expectError({ type: 'command.finished', command_id: queued.command_id, status: 'succeeded', result: {} })
    expect(err.code).toBe('not_found')
    expect(await getCommand(app, owner, queued.command_id)).toEqual(queued)
    await theirs.agent.close()
  })
})

describe('a PAT limited by server_allowlist', () => {
  test('creates and reads commands of its servers only; the others answer 404', async () => {
    const pat = await mintPat(app, asMember(owner), { scopes: ['commands:read', 'commands:write'], server_allowlist: [serverB] })
    const mine = await ok<CommandView>(
      await call(app, 'POST', '/commands', pat.token, { json: { server_id: serverB, type: 'diagnostics.run', params: {} } }),
      201,
    )
    expect(mine.issued_by).toEqual({ type: 'pat', id: pat.id })
    await expectProblem(
      await call(app, 'POST', '/commands', pat.token, { json: { server_id: serverA, type: 'diagnostics.run', params: {} } }),
      404,
      'not_found',
    )

    for (const [method, path] of routesOf(failed)) await expectProblem(await call(app, method, path, pat.token), 404, 'not_found')
    await ok(await call(app, 'GET', `/commands/${queued.command_id}`, pat.token))
    await ok(await call(app, 'GET', `/commands/${queued.command_id}/timeline`, pat.token))

    const listed = (await ok<{ items: CommandView[] }>(await call(app, 'GET', '/commands', pat.token))).items.map((c) => c.server_id)
    expect(listed.length).toBeGreaterThan(0)
    expect(new Set(listed)).toEqual(new Set([serverB]))
    expect((await ok(await call(app, 'GET', `/commands?server_id=${serverA}`, pat.token))).items).toEqual([])
    expect((await getCommand(app, owner, failed.command_id)).version).toBe(failed.version)
  })

  test('a read-only PAT cannot create or cancel (403) but can read', async () => {
    const pat = await mintPat(app, asMember(owner), { scopes: ['commands:read'] })
    await expectProblem(
      await call(app, 'POST', '/commands', pat.token, { json: { server_id: serverB, type: 'diagnostics.run', params: {} } }),
      403,
      'forbidden',
    )
    await expectProblem(await call(app, 'POST', `/commands/${queued.command_id}/cancel`, pat.token), 403, 'forbidden')
    expect((await ok<CommandView>(await call(app, 'GET', `/commands/${queued.command_id}`, pat.token))).execution_status).toBe('not_started')
  })
})
