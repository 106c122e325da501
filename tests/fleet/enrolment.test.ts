import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import {
  advance,
  api,
  enrolAgent,
  eventually,
  getServer,
  httpsHello,
  insertSecondTenant,
  mintInitToken,
  newOwner,
  ok,
  RawAgent,
  rawUpgrade,
  register,
  serverEvents,
  setAccountState,
  setPlan,
  type Enrolled,
  stopApp,
} from '../support/fleet'
import { expectProblem } from '../support/problem'
import { mutateAt } from '../support/access'

/** docs/fleet.md "Enrolment" and docs/access.md "Agent init tokens", over real HTTP. */

let app: TestApp
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
})
afterAll(() => stopApp(app))

const managedCount = async (tenantId: string) =>
  ((await app.deps.db.get(sql`SELECT count(*) AS n FROM servers WHERE tenant_id = ${tenantId} AND decommissioned_at IS NULL`)) as { n: number }).n

describe('claiming an init token', () => {
  test('an enrolment answers 201 with the server, a gpuhq_agt_ credential, the session URL and the intervals', async () => {
    const owner = await newOwner(app)
    const { token } = await mintInitToken(app, owner)
    const res = await register(app, token, { hostname: 'rig-07' })
    expect(res.status).toBe(201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const body = (await res.json()) as Enrolled
    expect(body.agent_token).toMatch(/^gpuhq_agt_[0-9A-Za-z]{46}$/)
    expect(body.ws_url).toBe('ws://gpuhq.test/api/v1/agent/ws')
    expect(body.heartbeat_interval_s).toBeGreaterThan(0)
    expect(body.telemetry_interval_s).toBeGreaterThan(0)
    const server = await getServer(app, owner, body.server_id)
    expect(server).toMatchObject({
      name: 'rig-07',
      hostname: 'rig-07',
      gpu_count: 2,
      gpu_model: 'NVIDIA GeForce RTX 4090',
      agent_version: '1.4.0',
      presence: 'offline',
      last_seen_at: null,
    })
    expect((await serverEvents(app, owner, body.server_id)).items.map((e) => e.kind)).toEqual(['agent.enrolled'])
  })

  test('a token is claimed once: the second use answers the same 401 as an unknown or mutated token', async () => {
    const owner = await newOwner(app)
    const { token } = await mintInitToken(app, owner)
    expect((await register(app, token)).status).toBe(201)
    const again = await expectProblem(await register(app, token), 401, 'unauthorized')
    const mutated = await expectProblem(await register(app, mutateAt(token, 20)), 401, 'unauthorized')
    const unknown = await expectProblem(await register(app, 'gpuhq_init_nothing'), 401, 'unauthorized')
    expect(again.detail).toBe(mutated.detail)
    expect(again.detail).toBe(unknown.detail)
    expect(await managedCount(owner.tenantId)).toBe(1)
  })

  test('a token past its lifetime on the test clock answers 401', async () => {
    const owner = await newOwner(app)
    const { token } = await mintInitToken(app, owner, { expires_in_s: 60 })
    await advance(app, 61)
    await expectProblem(await register(app, token), 401, 'unauthorized')
    expect(await managedCount(owner.tenantId)).toBe(0)
  })

  test('on success every other unused token bound to the same server is revoked, and tokens bound elsewhere are not', async () => {
    const owner = await newOwner(app, 'siblings', 'pro')
    const a = await enrolAgent(app, owner)
    const b = await enrolAgent(app, owner)
    const first = await mintInitToken(app, owner, { server_id: a.server_id })
    const sibling = await mintInitToken(app, owner, { server_id: a.server_id })
    const elsewhere = await mintInitToken(app, owner, { server_id: b.server_id })
    expect((await ok<Enrolled>(await register(app, first.token), 201)).server_id).toBe(a.server_id)
    await expectProblem(await register(app, sibling.token), 401, 'unauthorized')
    expect((await ok<Enrolled>(await register(app, elsewhere.token), 201)).server_id).toBe(b.server_id)
  })

  test('an unbound token that lands on an existing server also revokes the tokens bound to it', async () => {
    const owner = await newOwner(app, 'siblings', 'pro')
    const a = await enrolAgent(app, owner)
    const bound = await mintInitToken(app, owner, { server_id: a.server_id })
    const unbound = await mintInitToken(app, owner)
    expect((await ok<Enrolled>(await register(app, unbound.token, { fingerprint: a.facts.fingerprint }), 201)).server_id).toBe(a.server_id)
    await expectProblem(await register(app, bound.token), 401, 'unauthorized')
  })
})

describe('which server an enrolment attaches to', () => {
  test('a token bound to a server attaches to it whatever fingerprint the agent reports', async () => {
    const owner = await newOwner(app, 'bound', 'pro')
    const a = await enrolAgent(app, owner)
    const other = await enrolAgent(app, owner)
    const bound = await mintInitToken(app, owner, { server_id: a.server_id })
    // Even the fingerprint of the tenant's other server does not pull it away.
    const body = await ok<Enrolled>(await register(app, bound.token, { fingerprint: other.facts.fingerprint, hostname: 'reinstalled' }), 201)
    expect(body.server_id).toBe(a.server_id)
    expect((await getServer(app, owner, a.server_id)).hostname).toBe('reinstalled')
    expect(await managedCount(owner.tenantId)).toBe(2)
  })

  test("an unbound token attaches to the tenant's server with the same fingerprint, or creates a new one", async () => {
    const owner = await newOwner(app, 'unbound', 'pro')
    const a = await enrolAgent(app, owner, { fingerprint: 'sha256:same-box' })
    const again = await enrolAgent(app, owner, { fingerprint: 'sha256:same-box', hostname: 'same-box-reinstalled' })
    expect(again.server_id).toBe(a.server_id)
    const fresh = await enrolAgent(app, owner, { fingerprint: 'sha256:another-box' })
    expect(fresh.server_id).not.toBe(a.server_id)
    const none = await enrolAgent(app, owner, { fingerprint: null })
    expect([a.server_id, fresh.server_id]).not.toContain(none.server_id)
    expect(await managedCount(owner.tenantId)).toBe(3)
  })

  test("a fingerprint of another tenant's server never matches: a new server is created and the other keeps its agent", async () => {
    const mine = await newOwner(app, 'mine', 'pro')
    const theirs = await insertSecondTenant(app)
    const their = await enrolAgent(app, theirs, { fingerprint: 'sha256:shared-hardware' })
    const my = await enrolAgent(app, mine, { fingerprint: 'sha256:shared-hardware' })
    expect(my.server_id).not.toBe(their.server_id)
    expect(await managedCount(mine.tenantId)).toBe(1)
    expect((await httpsHello(app, their.agent_token)).status).toBe(204)
    await expectProblem(await api(app, mine, 'GET', `/servers/${their.server_id}`), 404, 'not_found')
  })
})

describe('enrolments refused at claim time leave the token unclaimed', () => {
  test('an agent older than MIN_AGENT_VERSION gets 426 unsupported_agent_version; a later good register with the same token works', async () => {
    const owner = await newOwner(app)
    const { token } = await mintInitToken(app, owner)
    await expectProblem(await register(app, token, { agent_version: '0.9.7' }), 426, 'unsupported_agent_version')
    expect(await managedCount(owner.tenantId)).toBe(0)
    expect((await register(app, token, { agent_version: '1.0.0' })).status).toBe(201)
  })

  test('a frozen account at claim time answers 403 account_frozen; after the freeze the same token works', async () => {
    const owner = await newOwner(app)
    const { token } = await mintInitToken(app, owner)
    await setAccountState(app, owner.tenantId, 'frozen')
    await expectProblem(await register(app, token), 403, 'account_frozen')
    expect(await managedCount(owner.tenantId)).toBe(0)
    await setAccountState(app, owner.tenantId, 'active')
    expect((await register(app, token)).status).toBe(201)
  })

  test('a full free plan at claim time answers 409 server_limit_reached; a decommission frees the slot for the same token', async () => {
    const owner = await newOwner(app, 'limit', 'starter')
    const first = await mintInitToken(app, owner)
    const second = await mintInitToken(app, owner)
    await setPlan(app, owner.tenantId, 'free')
    const enrolled = await ok<Enrolled>(await register(app, first.token), 201)
    await expectProblem(await register(app, second.token), 409, 'server_limit_reached')
    expect(await managedCount(owner.tenantId)).toBe(1)
    await ok(await api(app, owner, 'POST', `/servers/${enrolled.server_id}/decommission`))
    const later = await ok<Enrolled>(await register(app, second.token), 201)
    expect(later.server_id).not.toBe(enrolled.server_id)
  })

  test('on a full free plan an unbound token may still re-enrol the server it matches by fingerprint', async () => {
    const owner = await newOwner(app, 'limit', 'starter')
    const first = await mintInitToken(app, owner)
    const second = await mintInitToken(app, owner)
    await setPlan(app, owner.tenantId, 'free')
    const enrolled = await ok<Enrolled>(await register(app, first.token, { fingerprint: 'sha256:only-box' }), 201)
    expect((await ok<Enrolled>(await register(app, second.token, { fingerprint: 'sha256:only-box' }), 201)).server_id).toBe(enrolled.server_id)
  })
})

describe('re-enrolling a server replaces its agent credential at once', () => {
  test('the old credential gets 401 on the HTTPS hello and on the session upgrade, and its open session is closed', async () => {
    const owner = await newOwner(app)
    const old = await enrolAgent(app, owner)
    const { agent } = await RawAgent.start(app, old.agent_token)
    agent.heartbeat()
    await eventually(async () => (await getServer(app, owner, old.server_id)).presence === 'online')

    const bound = await mintInitToken(app, owner, { server_id: old.server_id })
    const fresh = await ok<Enrolled>(await register(app, bound.token), 201)
    expect(fresh.server_id).toBe(old.server_id)
    expect(fresh.agent_token).not.toBe(old.agent_token)

    const closed = await Promise.race([agent.closed, Bun.sleep(3000).then(() => null)])
    expect(closed).not.toBeNull()
    expect(closed!.code).not.toBe(1000)
    await expectProblem(await httpsHello(app, old.agent_token), 401, 'unauthorized')
    expect((await rawUpgrade(app, `Bearer ${old.agent_token}`)).status).toBe(401)
    expect((await httpsHello(app, fresh.agent_token)).status).toBe(204)
    // The server has no live session any more: it is not online until the new agent's heartbeat.
    await eventually(async () => (await getServer(app, owner, old.server_id)).presence === 'offline')
    const next = await RawAgent.start(app, fresh.agent_token)
    next.agent.heartbeat()
    await eventually(async () => (await getServer(app, owner, old.server_id)).presence === 'online')
    await next.agent.close()
  })
})
