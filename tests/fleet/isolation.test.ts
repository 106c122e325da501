import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/app'
import { startTestApp, type TestApp } from '../support/app'
import { api, enrolAgent, getServer, insertSecondTenant, listServers, newOwner, ok, stopApp, type Owner } from '../support/fleet'
import { expectProblem } from '../support/problem'

/**
 * Tenant isolation on every server and group route: an id of another tenant answers exactly what
 * an id that does not exist answers (a plain 404 not_found), and changes nothing. The routes are
 * read from the app itself, so a new server or group route is covered when it lands.
 */

let app: TestApp
let owner: Owner
let stranger: Owner
let serverId: string
let groupId: string
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'victim', 'pro')
  stranger = await insertSecondTenant(app)
  serverId = (await enrolAgent(app, owner)).server_id
  groupId = (await ok<{ id: string }>(await api(app, owner, 'POST', '/groups', { json: { name: 'Mine' } }), 201)).id
  await ok(await api(app, owner, 'PATCH', `/servers/${serverId}`, { json: { group_id: groupId, tags: ['site:fra'] } }))
  await ok(await api(app, owner, 'PUT', `/servers/${serverId}/keep-on/marketplace_a`))
  // The stranger has a fleet of its own, so its answers are not just empty-tenant answers.
  await enrolAgent(app, stranger)
  await ok(await api(app, stranger, 'POST', '/groups', { json: { name: 'Theirs' } }), 201)
})
afterAll(() => stopApp(app))

const MISSING = '01a00000-0000-7000-8000-000000000000'
const BODIES: Record<string, unknown> = {
  'PATCH /api/v1/servers/:id': { name: 'taken over' },
  'PATCH /api/v1/groups/:id': { name: 'taken over' },
  'PUT /api/v1/servers/:id/maintenance': { reason: 'taken over' },
}

function idRoutes(): { method: string; path: string; key: string }[] {
  const seen = new Map<string, { method: string; path: string; key: string }>()
  for (const r of createApp(app.deps, app.runner).routes) {
    if (!/^\/api\/v1\/(servers|groups)\/:id/.test(r.path)) continue
    const key = `${r.method} ${r.path}`
    seen.set(key, { method: r.method, path: r.path, key })
  }
  return [...seen.values()]
}

const fill = (path: string, id: string) =>
  path
    .replace(/^\/api\/v1/, '')
    .replace(':id', id)
    .replace(':marketplace', 'marketplace_a')
const comparable = (p: Record<string, unknown>) => ({ type: p.type, title: p.title, status: p.status, code: p.code, detail: p.detail, errors: p.errors })

describe('another tenant’s ids', () => {
  test('the route table has the server and group routes this file must cover', () => {
    const keys = idRoutes().map((r) => r.key)
    for (const k of [
      'GET /api/v1/servers/:id',
      'PATCH /api/v1/servers/:id',
      'POST /api/v1/servers/:id/decommission',
      'PUT /api/v1/servers/:id/keep-on/:marketplace',
      'DELETE /api/v1/servers/:id/keep-on/:marketplace',
      'PUT /api/v1/servers/:id/maintenance',
      'DELETE /api/v1/servers/:id/maintenance',
      'GET /api/v1/servers/:id/events',
      'GET /api/v1/groups/:id',
      'PATCH /api/v1/groups/:id',
      'DELETE /api/v1/groups/:id',
    ])
      expect(keys).toContain(k)
  })

  test('every server and group route answers a plain 404 not_found, identical to a missing id, and changes nothing', async () => {
    const serverBefore = await getServer(app, owner, serverId)
    const groupBefore = await ok(await api(app, owner, 'GET', `/groups/${groupId}`))
    const eventsBefore = await ok(await api(app, owner, 'GET', `/servers/${serverId}/events`))
    const failures: string[] = []
    for (const route of idRoutes()) {
      const foreignId = route.path.startsWith('/api/v1/servers') ? serverId : groupId
      const json = BODIES[route.key] ?? (route.method === 'GET' || route.method === 'DELETE' ? undefined : {})
      const foreign = await api(app, stranger, route.method, fill(route.path, foreignId), { json })
      const missing = await api(app, stranger, route.method, fill(route.path, MISSING), { json })
      try {
        const a = await expectProblem(foreign, 404, 'not_found')
        const b = await expectProblem(missing, 404, 'not_found')
        expect(comparable(a as never)).toEqual(comparable(b as never))
        expect(a.errors).toBeUndefined()
      } catch (e) {
        failures.push(`${route.key}: ${(e as Error).message.split('\n')[0]}`)
      }
    }
    expect(failures).toEqual([])
    expect(await getServer(app, owner, serverId)).toEqual(serverBefore)
    expect(await ok(await api(app, owner, 'GET', `/groups/${groupId}`))).toEqual(groupBefore)
    expect(await ok(await api(app, owner, 'GET', `/servers/${serverId}/events`))).toEqual(eventsBefore)
  })

  test('the stranger’s lists and dashboard never show the owner’s servers or groups', async () => {
    const theirs = await listServers(app, stranger)
    expect(theirs.items.map((r) => r.id)).not.toContain(serverId)
    expect(theirs.items).toHaveLength(1)
    expect((await listServers(app, stranger, { group_id: groupId })).items).toEqual([])
    expect((await listServers(app, stranger, { tag: 'site:fra' })).items).toEqual([])
    const groups = await ok<{ items: { id: string }[] }>(await api(app, stranger, 'GET', '/groups'))
    expect(groups.items.map((g) => g.id)).not.toContain(groupId)
    const dash = await ok<{ servers: { total: number } }>(await api(app, stranger, 'GET', '/dashboard'))
    expect(dash.servers.total).toBe(1)
  })

  test('the stranger cannot put its server into the owner’s group, nor mint a token bound to the owner’s server', async () => {
    const mine = (await listServers(app, stranger)).items[0]!.id
    const p = await expectProblem(await api(app, stranger, 'PATCH', `/servers/${mine}`, { json: { group_id: groupId } }), 422, 'validation_failed')
    expect(p.errors).toEqual([{ path: '/group_id', code: 'unknown_group' }])
    await expectProblem(await api(app, stranger, 'POST', '/tokens/init', { json: { server_id: serverId } }), 404, 'not_found')
  })
})
