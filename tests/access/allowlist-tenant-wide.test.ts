import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { withTransaction } from '../../db/client'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { call, type Caller, insertServer, type Member, mintPat, newTenant, setPlan } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { vastMarketOffer } from '../support/marketplaces'
import { expectProblem } from '../support/problem'

/**
 * Issue 34 (2), the cases reproduced from outside: a token limited to servers (server_allowlist)
 * could disconnect the tenant's marketplace account (the owner's links on other servers went with
 * it), connect the tenant to a platform account of its choosing, create a pricing policy for a
 * whole GPU model or group (which strategy.suggest then ran over servers outside the allowlist), and
 * disable or delete the owner's fleet-wide policy. Against the marketplace_a simulator over real
 * HTTP, with two listed RTX 4090 machines: 701 linked to rig-1 (inside the allowlist) and 702 to
 * rig-2 (outside).
 */

const KEY = 'vast-reach-key-0123456789abcdef'
const ATTACKER_KEY = 'vast-attacker-key-fedcba9876543210'
const HOST = 6161

let sim: MarketplaceASim
let app: TestApp
let owner: Member
let s1: string
let s2: string
/** marketplaces and strategy, read and write, limited to rig-1. */
let token: string

const send = (method: string, path: string, json?: unknown, caller: Caller = owner) => call(app, method, path, caller, { json })
async function ok<T = any>(res: Promise<Response>, status = 200): Promise<T> {
  const r = await res
  const text = await r.text()
  expect({ status: r.status, body: text }).toMatchObject({ status })
  return (text ? JSON.parse(text) : null) as T
}
async function runJob(job: string): Promise<string> {
  const r = await ok<{ outcome: string; detail: string }>(app.fetch(`/api/v1/_test/jobs/${job}/run`, { method: 'POST' }))
  expect(r.outcome).toBe('succeeded')
  return r.detail
}
async function tenantWide(res: Response, path = '') {
  const p = await expectProblem(res, 403, 'forbidden')
  expect(p.errors).toEqual([{ path, code: 'tenant_wide' }])
  return p
}
type Link = { server_id: string; marketplace: string; state: string }
const links = async (caller: Caller = owner) => (await ok<{ links: Link[] }>(send('GET', '/marketplaces/links', undefined, caller))).links
type Policy = { id: string; enabled: boolean; target: Record<string, unknown>; version: number }
const policies = async (caller: Caller = owner) => (await ok<{ items: Policy[] }>(send('GET', '/strategy/policies', undefined, caller))).items
type Suggestion = { server_id: string; policy_id: string }
const suggestionsFor = async (caller: Caller = owner) =>
  (await ok<{ items: Suggestion[] }>(send('GET', '/strategy/suggestions?limit=200', undefined, caller))).items

const byModel = { name: 'every 4090', marketplace: 'marketplace_a', target: { gpu_model: 'rtx_4090' } }

beforeAll(async () => {
  sim = await startMarketplaceA({
    rateScale: 0,
    owners: [
      { id: HOST, email: 'reach-host@example.com', keys: [{ key: KEY, label: 'owner' }] },
      { id: 6262, email: 'attacker@example.com', keys: [{ key: ATTACKER_KEY, label: 'attacker' }] },
    ],
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: sim.url, LOG_LEVEL: 'silent' })
  owner = await newTenant(app, 'reach-owner')
  await setPlan(app, owner.tenantId, 'pro')
  s1 = await insertServer(app, owner.tenantId, 'rig-1')
  s2 = await insertServer(app, owner.tenantId, 'rig-2')
  for (const [id, host] of [
    [701, 'rig-701'],
    [702, 'rig-702'],
  ] as const)
    sim.putMachine(HOST, id, { hostname: host, listed: true, gpu_name: 'RTX 4090', num_gpus: 2, listed_gpu_cost: 0.5, listed_min_gpu_count: 1 })
  // The rest of the RTX 4090 market: 0.30 .. 0.42 a GPU-hour, so the median lowers both offers.
  for (const [id, dph] of [
    [9201, 0.3],
    [9202, 0.36],
    [9203, 0.42],
  ] as const)
    sim.addMarketOffer(vastMarketOffer(id, 'RTX 4090', 1, dph))
  await ok(send('PUT', '/marketplaces/marketplace_a', { api_key: KEY }))
  token = (
    await mintPat(app, owner, {
      name: 'rig-1 only',
      scopes: ['marketplaces:read', 'marketplaces:write', 'strategy:read', 'strategy:write'],
      server_allowlist: [s1],
    })
  ).token
  // rig-2's link is the owner's; rig-1 stays unlinked until the token links it.
  await ok(send('POST', '/marketplaces/links', { server_id: s2, marketplace: 'marketplace_a', external_machine_id: '702' }), 201)
  await runJob('marketplaces.sync')
})
afterAll(async () => {
  await app.close()
  await sim.stop()
})

describe('the marketplace account is the tenant’s, not a server’s', () => {
  test('a token limited to an unlinked server cannot disconnect it, and the owner’s links stay', async () => {
    await tenantWide(await send('DELETE', '/marketplaces/marketplace_a', undefined, token))
    expect((await links()).map((l) => [l.server_id, l.marketplace])).toEqual([[s2, 'marketplace_a']])
    const accounts = (await ok<{ items: { marketplace: string; status: string }[] }>(send('GET', '/marketplaces/accounts'))).items
    expect(accounts).toMatchObject([{ marketplace: 'marketplace_a', status: 'connected' }])
  })

  test('nor connect the tenant to another platform account: the key is never even tried', async () => {
    const before = (await ok<{ items: { key_hash: string; owner: string }[] }>(send('GET', '/marketplaces/accounts'))).items[0]!
    sim.clearRequests()
    await tenantWide(await send('PUT', '/marketplaces/marketplace_a', { api_key: ATTACKER_KEY }, token))
    expect(sim.requests()).toEqual([])
    const after = (await ok<{ items: { key_hash: string; owner: string }[] }>(send('GET', '/marketplaces/accounts'))).items[0]!
    expect(after).toEqual(before)
  })

  test('nor read the accounts or the fleet-wide operations log, which show other servers', async () => {
    await tenantWide(await send('GET', '/marketplaces/accounts', undefined, token))
    await tenantWide(await send('GET', '/marketplaces/operations', undefined, token))
  })

  test('nor take a machine another server holds, which would put that server’s link in conflict; candidates do not show such a machine', async () => {
    const found = await ok<{ candidates: { external_machine_id: string }[] }>(
      send('GET', `/marketplaces/links/candidates?server_id=${s1}&marketplace=marketplace_a`, undefined, token),
    )
    expect(found.candidates.map((c) => c.external_machine_id)).toEqual(['701'])
    expect(JSON.stringify(found)).not.toContain(s2)
    const refused = await expectProblem(
      await send('POST', '/marketplaces/links', { server_id: s1, marketplace: 'marketplace_a', external_machine_id: '702' }, token),
      403,
      'forbidden',
    )
    expect(refused.errors).toEqual([{ path: '/external_machine_id', code: 'outside_allowlist' }])
    expect((await links()).map((l) => [l.server_id, l.state])).toEqual([[s2, 'linked']])
  })

  test('its own server it still links and lists', async () => {
    await ok(send('POST', '/marketplaces/links', { server_id: s1, marketplace: 'marketplace_a', external_machine_id: '701' }, token), 201)
    expect((await links(token)).map((l) => l.server_id)).toEqual([s1])
    expect((await links()).map((l) => l.server_id).sort()).toEqual([s1, s2].sort())
  })
})

describe('pricing policies reach only the token’s servers', () => {
  test('a group or GPU-model target is refused (403 tenant_wide, pointing at it), in a preview too, and nothing is stored', async () => {
    const group = await ok<{ id: string }>(send('POST', '/groups', { name: 'every rig' }), 201)
    await tenantWide(await send('POST', '/strategy/policies', byModel, token), '/target/gpu_model')
    await tenantWide(await send('POST', '/strategy/policies', { ...byModel, target: { group_id: group.id } }, token), '/target/group_id')
    await tenantWide(await send('POST', '/strategy/preview', byModel, token), '/target/gpu_model')
    expect(await policies()).toEqual([])
  })

  test('a policy of its own servers is allowed, and strategy.suggest then prices rig-1 alone', async () => {
    const mine = await ok<Policy>(send('POST', '/strategy/policies', { ...byModel, name: 'rig-1', target: { server_ids: [s1] } }, token), 201)
    const changed = await ok<Policy>(send('PATCH', `/strategy/policies/${mine.id}`, { target_percentile: 40 }, token))
    expect(changed.version).toBe(2)
    await runJob('strategy.suggest')
    const made = await suggestionsFor()
    expect(made.map((s) => [s.server_id, s.policy_id])).toEqual([[s1, mine.id]])
    // A target may not be widened to a model either.
    await tenantWide(await send('PATCH', `/strategy/policies/${mine.id}`, { target: { gpu_model: 'rtx_4090' } }, token), '/target/gpu_model')
    // Another server in a target is 404, as everywhere in the allowlist.
    await expectProblem(await send('PATCH', `/strategy/policies/${mine.id}`, { target: { server_ids: [s1, s2] } }, token), 404, 'not_found')
    expect((await policies()).map((p) => p.target)).toEqual([{ server_ids: [s1] }])
  })

  test('the owner’s fleet-wide policy it sees but cannot disable, change or delete', async () => {
    const fleet = await ok<Policy>(send('POST', '/strategy/policies', { ...byModel, name: 'owner: every 4090' }), 201)
    expect((await policies(token)).map((p) => p.id)).toContain(fleet.id)
    await tenantWide(await send('PATCH', `/strategy/policies/${fleet.id}`, { enabled: false }, token))
    await tenantWide(await send('PATCH', `/strategy/policies/${fleet.id}`, { target: { server_ids: [s1] } }, token))
    await tenantWide(await send('DELETE', `/strategy/policies/${fleet.id}`, undefined, token))
    expect(await ok<Policy>(send('GET', `/strategy/policies/${fleet.id}`))).toMatchObject({ enabled: true, version: 1, target: { gpu_model: 'rtx_4090' } })
  })

  test('a policy naming other servers too it sees cut to its own, and cannot change (403 outside_allowlist); one of other servers only is 404', async () => {
    const both = await ok<Policy>(send('POST', '/strategy/policies', { ...byModel, name: 'owner: both rigs', target: { server_ids: [s1, s2] } }), 201)
    const theirs = await ok<Policy>(send('POST', '/strategy/policies', { ...byModel, name: 'owner: rig-2', target: { server_ids: [s2] } }), 201)
    const seen = await policies(token)
    expect(seen.find((p) => p.id === both.id)!.target).toEqual({ server_ids: [s1] })
    expect(seen.some((p) => p.id === theirs.id)).toBe(false)
    expect(JSON.stringify(seen)).not.toContain(s2)
    const refused = await expectProblem(await send('PATCH', `/strategy/policies/${both.id}`, { enabled: false }, token), 403, 'forbidden')
    expect(refused.errors).toEqual([{ path: '', code: 'outside_allowlist' }])
    await expectProblem(await send('DELETE', `/strategy/policies/${both.id}`, undefined, token), 403, 'forbidden')
    await expectProblem(await send('GET', `/strategy/policies/${theirs.id}`, undefined, token), 404, 'not_found')
    await expectProblem(await send('DELETE', `/strategy/policies/${theirs.id}`, undefined, token), 404, 'not_found')
    expect((await policies()).filter((p) => p.id === both.id || p.id === theirs.id).every((p) => p.enabled)).toBe(true)
  })
})

describe('incidents of the whole account', () => {
  test('a token limited to servers sees them but cannot acknowledge or resolve them (403 tenant_wide)', async () => {
    await withTransaction(app.deps.db, (tx) =>
      app.deps.events.emit('tenant.balance_low', { tx, tenantId: owner.tenantId, daysLeft: 1, balanceMicros: 1_000_000 }),
    )
    const alerts = await mintPat(app, owner, { name: 'alerts of rig-1', scopes: ['notifications:read', 'notifications:write'], server_allowlist: [s1] })
    const seen = (await ok<{ items: { id: string; server_id: string | null; state: string }[] }>(send('GET', '/alerts', undefined, alerts.token))).items
    const incident = seen.find((i) => i.server_id === null)!
    expect(incident.state).toBe('open')
    await tenantWide(await send('POST', `/alerts/${incident.id}/acknowledge`, undefined, alerts.token))
    await tenantWide(await send('POST', `/alerts/${incident.id}/resolve`, {}, alerts.token))
    expect(await ok(send('GET', `/alerts/${incident.id}`))).toMatchObject({ state: 'open' })
    // The owner still handles it.
    expect(await ok(send('POST', `/alerts/${incident.id}/acknowledge`))).toMatchObject({ state: 'acknowledged' })
  })
})
