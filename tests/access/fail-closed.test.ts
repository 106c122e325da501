import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ALL_SCOPES, buildAccessIndex } from '../../src/platform/access'
import { addMember, call, insertServer, mintPat, newTenant, setPlan, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'

/** Issue 13 (4): access fails closed, and a token reads only what its scopes name. */

const route = (method: string, path: string, spec?: unknown) => ({ method, path, hooks: spec ? { detail: { 'x-gpuhq-access': spec } } : {} })

describe('an access declaration is required for a route to start', () => {
  test('a route without a declaration stops the app, naming the route', () => {
    expect(() => buildAccessIndex([route('GET', '/api/v1/things')])).toThrow('GET /api/v1/things has no access declaration')
  })

  test('a declaration with neither a scope, cookieOnly nor anyToken stops the app', () => {
    expect(() => buildAccessIndex([route('GET', '/api/v1/things', { role: 'viewer' })])).toThrow('names no scope, cookieOnly or anyToken')
  })

  test('an empty list of scopes of which one suffices (anyScope) names no scope: it stops the app', () => {
    expect(() => buildAccessIndex([route('GET', '/api/v1/things', { role: 'viewer', anyScope: [] })])).toThrow('names no scope, cookieOnly or anyToken')
    expect(buildAccessIndex([route('GET', '/api/v1/things', { role: 'viewer', anyScope: ['servers:read'], reach: 'server' })]).size).toBe(1)
  })

  test('a /servers/:id route that does not declare its server parameter stops the app', () => {
    expect(() => buildAccessIndex([route('GET', '/api/v1/servers/:id/things', { role: 'viewer', scope: 'servers:read' })])).toThrow(
      "must declare serverParam: 'id'",
    )
  })

  test('a declaration that does not say what it reaches (server, tenant or none) stops the app, naming the route', () => {
    expect(() => buildAccessIndex([route('GET', '/api/v1/things', { role: 'viewer', scope: 'servers:read' })])).toThrow(
      "GET /api/v1/things must say what it reaches: reach 'server', 'tenant' or 'none'",
    )
    expect(() => buildAccessIndex([route('GET', '/api/v1/things', { role: 'viewer', scope: 'servers:read', reach: 'fleet' })])).toThrow(
      'must say what it reaches',
    )
  })

  test('the billing and audit areas are tenant-wide, and a write a token can make cannot reach nothing', () => {
    expect(() => buildAccessIndex([route('GET', '/api/v1/money', { role: 'viewer', scope: 'billing:read', reach: 'server' })])).toThrow(
      "GET /api/v1/money uses billing:read, an area that spans the tenant: reach must be 'tenant'",
    )
    expect(() => buildAccessIndex([route('POST', '/api/v1/things', { role: 'admin', scope: 'servers:write', reach: 'none' })])).toThrow(
      "POST /api/v1/things is a write a token can make: reach must be 'server' or 'tenant', not 'none'",
    )
    expect(buildAccessIndex([route('POST', '/api/v1/things', { role: 'viewer', cookieOnly: true, reach: 'none' })]).size).toBe(1)
  })

  test('only the routes named as plugin pages are public without a declaration', () => {
    const index = buildAccessIndex(
      [route('GET', '/api/v1/openapi.json'), route('GET', '/api/v1/me', { role: 'viewer', anyToken: true, reach: 'none' })],
      ['GET /api/v1/openapi.json'],
    )
    expect(index.get('GET /api/v1/openapi.json')).toEqual({ public: true })
  })
})

let app: TestApp
let owner: Member
let viewer: Member
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newTenant(app, 'closed')
  await setPlan(app, owner.tenantId, 'pro')
  viewer = await addMember(app, owner.tenantId, 'viewer')
})
afterAll(() => app.close())

describe('a token reads only what its scopes name', () => {
  test('a servers:read token cannot list the members of the tenant', async () => {
    const { token } = await mintPat(app, owner, { scopes: ['servers:read'] })
    const res = await call(app, 'GET', '/users', token)
    expect(res.status).toBe(403)
    expect(((await res.json()) as { code: string }).code).toBe('forbidden')
  })

  test('members are read with audit:read, which only owners and admins can grant a token', async () => {
    const { token } = await mintPat(app, owner, { scopes: ['audit:read'] })
    expect((await call(app, 'GET', '/users', token)).status).toBe(200)
    // A viewer still sees the members in the browser.
    expect((await call(app, 'GET', '/users', viewer)).status).toBe(200)
  })

  test('what the plan allows is billing data: billing:read', async () => {
    const servers = (await mintPat(app, owner, { scopes: ['servers:read'] })).token
    const billing = (await mintPat(app, owner, { scopes: ['billing:read'] })).token
    expect((await call(app, 'GET', '/plans/current', servers)).status).toBe(403)
    expect((await call(app, 'GET', '/plans/current', billing)).status).toBe(200)
  })

  test('any token may read who it acts for, and none may change the profile', async () => {
    const { token } = await mintPat(app, owner, { scopes: ['servers:read'] })
    const me = await call(app, 'GET', '/me', token)
    expect(me.status).toBe(200)
    expect(((await me.json()) as { id: string }).id).toBe(owner.userId)
    const patch = await call(app, 'PATCH', '/me', await mintPat(app, owner, { scopes: ALL_SCOPES }).then((p) => p.token), { json: { locale: 'de' } })
    expect(patch.status).toBe(403)
  })

  test('every protected operation in the OpenAPI document names a scope, a browser session, or every token', async () => {
    const doc = (await (await app.fetch('/api/v1/openapi.json')).json()) as { paths: Record<string, Record<string, Record<string, any>>> }
    const loose: string[] = []
    for (const [path, item] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(item)) {
        const spec = op['x-gpuhq-access']
        if (!spec) loose.push(`${method} ${path}: no x-gpuhq-access`)
        else if (!spec.public && !spec.agent && !spec.mcp && !spec.scope && !spec.anyScope?.length && !spec.cookieOnly && !spec.anyToken)
          loose.push(`${method} ${path}`)
      }
    expect(loose).toEqual([])
  })

  test('a server outside the allowlist in a query filter matches nothing, like an id that does not exist', async () => {
    const a = await insertServer(app, owner.tenantId, 'a')
    const b = await insertServer(app, owner.tenantId, 'b')
    expect((await call(app, 'POST', '/commands', owner, { json: { server_id: b, type: 'diagnostics.run', params: {} } })).status).toBe(201)
    const { token } = await mintPat(app, owner, { scopes: ALL_SCOPES, server_allowlist: [a] })
    const outside = await call(app, 'GET', `/commands?server_id=${b}`, token)
    expect(outside.status).toBe(200)
    expect(((await outside.json()) as { items: unknown[] }).items).toEqual([])
    expect((await call(app, 'GET', `/commands?server_id=${a}`, token)).status).toBe(200)
  })
})
