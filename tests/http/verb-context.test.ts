import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { setActor, type Actor } from '../../src/platform/access'
import { API_PREFIX, apiRoutes } from '../../src/platform/api'
import { platform } from '../../src/platform/http'
import { startServer, type RunningServer } from '../../src/server'
import type { App } from '../../src/app'
import { startTestApp, type TestApp } from '../support/app'
import { expectProblem } from '../support/problem'

/**
 * The verb context every routes file gets from apiRoutes (src/platform/api.ts): `deps`, and `actor`
 * and `audit` read on demand, as strict as actorOf(request). Mounted behind the real platform plugin
 * and the real server wrapper, with an access check that authenticates only /authed.
 */
let app: TestApp
let server: RunningServer
const ACTOR: Actor = {
  kind: 'user',
  via: 'cookie',
  tenantId: '0190a8f2-0000-7000-8000-000000000001',
  userId: '0190a8f2-0000-7000-8000-000000000002',
  role: 'owner',
  scopes: null,
  serverAllowlist: null,
  tenant: { planCode: null, accountState: 'active' },
}

beforeAll(async () => {
  app = await startTestApp()
  const probe = new Elysia()
    .use(
      platform(app.deps, {
        allowedMethods: () => ['GET', 'HEAD'],
        checkAccess: async (request, route) => {
          if (route.endsWith('/authed')) setActor(request, ACTOR)
        },
      }),
    )
    .use(
      apiRoutes('verb-probe', app.deps)
        .get('/public/deps', ({ verb }) => ({ same_deps: verb.deps === app.deps }))
        .get('/public/actor', ({ verb }) => ({ tenant: verb.actor.tenantId }))
        .get('/public/audit', ({ verb }) => ({ request: verb.audit.requestId }))
        .get('/public/spread', ({ verb }) => ({ keys: Object.keys({ ...verb }) }))
        .get('/authed', ({ verb, request }) => {
          const first = verb.audit
          return {
            tenant: verb.actor.tenantId,
            audit_actor_is_actor: verb.audit.actor === verb.actor,
            audit_once: first === verb.audit,
            request_id: verb.audit.requestId,
            user_agent: verb.audit.userAgent,
            header_agent: request.headers.get('user-agent'),
          }
        }),
    )
  server = startServer(probe as unknown as App, app.deps, { port: 0, hostname: '127.0.0.1' })
})
afterAll(async () => {
  await server.stop()
  await app.close()
})

describe('the verb context', () => {
  test('its routes live under API_PREFIX', async () => {
    expect(API_PREFIX).toBe('/api/v1')
    const res = await fetch(`${server.url}/api/v1/public/deps`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ same_deps: true })
  })

  test('on a route without authentication, reading the actor, the audit facts or the whole context fails as actorOf does', async () => {
    for (const path of ['/public/actor', '/public/audit', '/public/spread']) {
      const res = await fetch(`${server.url}/api/v1${path}`)
      const problem = await expectProblem(res, 500, 'temporarily_unavailable')
      const logged = app.logs.find((l) => l.msg === 'request failed' && l.request_id === problem.request_id)
      expect(JSON.stringify(logged)).toContain('actorOf() called on a route without authentication')
    }
  })

  test("on an authenticated route it is the request's actor and audit facts, made once", async () => {
    const res = await fetch(`${server.url}/api/v1/authed`, { headers: { 'user-agent': 'verb-probe/1' } })
    expect(res.status).toBe(200)
    const body = (await res.json()) as Record<string, unknown>
    expect(body).toEqual({
      tenant: ACTOR.tenantId,
      audit_actor_is_actor: true,
      audit_once: true,
      request_id: res.headers.get('x-request-id'),
      user_agent: 'verb-probe/1',
      header_agent: 'verb-probe/1',
    })
  })
})
