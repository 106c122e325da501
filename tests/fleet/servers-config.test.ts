import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import {
  advance,
  api,
  enrolAgent,
  getServer,
  httpsHello,
  listServers,
  mintInitToken,
  newOwner,
  ok,
  RawAgent,
  rawUpgrade,
  serverEvents,
  stopApp,
  type Owner,
  type ServerDetail,
} from '../support/fleet'
import { expectProblem } from '../support/problem'

/** Server detail, configuration (PATCH), decommission, keep-on flags and maintenance. */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'config', 'pro')
})
afterAll(() => stopApp(app))

const patch = (id: string, json: unknown, headers: Record<string, string> = {}) => api(app, owner, 'PATCH', `/servers/${id}`, { json, headers })

describe('the server detail', () => {
  test('has the row fields plus host facts, telemetry and config, with its version as ETag and 304 on If-None-Match', async () => {
    const e = await enrolAgent(app, owner, { hostname: 'detail-host', public_ip: '198.51.100.4', disk_gb: 1000, port_range: '41000-41099' })
    const res = await api(app, owner, 'GET', `/servers/${e.server_id}`)
    const detail = await ok<ServerDetail>(res)
    expect(res.headers.get('etag')).toBe(`"${detail.version}"`)
    expect(detail).toMatchObject({
      id: e.server_id,
      name: 'detail-host',
      hostname: 'detail-host',
      public_ip: '198.51.100.4',
      disk_gb: 1000,
      port_range: '41000-41099',
      fsm_state: 'new',
      presence: 'offline',
      keep_on: [],
      electricity_usd_per_kwh: null,
      decommissioned_at: null,
      last_hello_at: null,
      telemetry: { host: {}, gpus: [] },
    })
    expect(detail).not.toHaveProperty('maintenance')
    expect(detail.gpus).toHaveLength(2)
    const cached = await api(app, owner, 'GET', `/servers/${e.server_id}`, { headers: { 'if-none-match': res.headers.get('etag')! } })
    expect(cached.status).toBe(304)
    expect(await cached.text()).toBe('')
    await ok(patch(e.server_id, { name: 'renamed' }))
    expect((await api(app, owner, 'GET', `/servers/${e.server_id}`, { headers: { 'if-none-match': res.headers.get('etag')! } })).status).toBe(200)
  })

  test('an unknown id answers 404 and a malformed one 422', async () => {
    await expectProblem(await api(app, owner, 'GET', '/servers/01a00000-0000-7000-8000-000000000000'), 404, 'not_found')
    await expectProblem(await api(app, owner, 'GET', '/servers/not-a-uuid'), 422, 'validation_failed')
  })
})

describe('updating a server', () => {
  test('name, group, tags and electricity tariff change together under If-Match, and the version moves', async () => {
    const e = await enrolAgent(app, owner)
    const group = await ok<{ id: string }>(await api(app, owner, 'POST', '/groups', { json: { name: `g-${e.server_id}` } }), 201)
    const before = await getServer(app, owner, e.server_id)
    const tags = ['gpu:4090', 'site:fra-1', 'owned', 'rack/row.3_b', 'note:a=b+c']
    const res = await patch(
      e.server_id,
      { name: '  Rig 7  ', group_id: group.id.toUpperCase(), tags, electricity_usd_per_kwh: '0.145' },
      { 'if-match': `"${before.version}"` },
    )
    const after = await ok<ServerDetail>(res)
    expect(after).toMatchObject({ name: 'Rig 7', group_id: group.id, tags, electricity_usd_per_kwh: '0.145', version: before.version + 1 })
    expect(res.headers.get('etag')).toBe(`"${before.version + 1}"`)
    expect(await getServer(app, owner, e.server_id)).toMatchObject({ name: 'Rig 7', group_id: group.id, tags })
    expect((await serverEvents(app, owner, e.server_id, { kind: 'server.updated' })).items).toHaveLength(1)

    // A stale tag is refused with 412 and changes nothing.
    await expectProblem(await patch(e.server_id, { name: 'lost update' }, { 'if-match': `"${before.version}"` }), 412, 'conflict')
    expect((await getServer(app, owner, e.server_id)).name).toBe('Rig 7')
    // Without If-Match the write goes through; null clears group and tariff.
    expect(await ok(patch(e.server_id, { group_id: null, electricity_usd_per_kwh: null, tags: [] }))).toMatchObject({
      group_id: null,
      electricity_usd_per_kwh: null,
      tags: [],
    })
  })

  test('64 tags are accepted and 65 are not', async () => {
    const e = await enrolAgent(app, owner)
    const tags = Array.from({ length: 65 }, (_, i) => `t${i}`)
    expect((await ok<ServerDetail>(patch(e.server_id, { tags: tags.slice(0, 64) }))).tags).toHaveLength(64)
    const p = await expectProblem(await patch(e.server_id, { tags }), 422, 'validation_failed')
    expect(p.errors?.[0]?.path).toMatch(/^\/tags/)
    expect((await getServer(app, owner, e.server_id)).tags).toHaveLength(64)
  })

  const invalid: [string, Record<string, unknown>, string][] = [
    ['a tag with a space', { tags: ['has space'] }, '/tags/0'],
    ['an empty tag', { tags: [''] }, '/tags/0'],
    ['a tag with an empty value', { tags: ['key:'] }, '/tags/0'],
    ['a duplicate tag', { tags: ['a', 'a'] }, '/tags'],
    ['a tag that is not a string', { tags: [7] }, '/tags/0'],
    ['an empty name', { name: '' }, '/name'],
    ['a JSON number as tariff', { electricity_usd_per_kwh: 0.145 }, '/electricity_usd_per_kwh'],
    ['a tariff with 7 fraction digits', { electricity_usd_per_kwh: '0.1234567' }, '/electricity_usd_per_kwh'],
    ['a negative tariff', { electricity_usd_per_kwh: '-0.10' }, '/electricity_usd_per_kwh'],
    ['a group id that is not a UUID', { group_id: 'frankfurt' }, '/group_id'],
    ['an unknown field', { colour: 'red' }, ''],
    ['an empty body', {}, ''],
  ]
  test.each(invalid)('%s answers 422 and changes nothing', async (_name, body, path) => {
    const e = await enrolAgent(app, owner)
    const before = await getServer(app, owner, e.server_id)
    const p = await expectProblem(await patch(e.server_id, body), 422, 'validation_failed')
    if (path) expect(p.errors?.map((x) => x.path)).toContainEqual(expect.stringMatching(new RegExp(`^${path.replace(/\//g, '\\/')}`)))
    expect(await getServer(app, owner, e.server_id)).toEqual(before)
  })

  test('an unknown group answers 422 on /group_id', async () => {
    const e = await enrolAgent(app, owner)
    const p = await expectProblem(await patch(e.server_id, { group_id: '01a00000-0000-7000-8000-000000000000' }), 422, 'validation_failed')
    expect(p.errors).toEqual([{ path: '/group_id', code: 'unknown_group' }])
  })
})

describe('decommissioning', () => {
  test('revokes the credential and closes the session, drops the server from the list, keeps its detail and events, and frees a free-plan slot', async () => {
    const free = await newOwner(app, 'decom')
    const e = await enrolAgent(app, free)
    const { agent } = await RawAgent.start(app, e.agent_token, e.facts)
    agent.heartbeat()
    await agent.barrier()
    await expectProblem(await api(app, free, 'POST', '/tokens/init', { json: {} }), 409, 'server_limit_reached')

    const out = await ok<ServerDetail>(await api(app, free, 'POST', `/servers/${e.server_id}/decommission`))
    expect(out.decommissioned_at).not.toBeNull()
    expect(out.presence).toBe('offline')
    const closed = await Promise.race([agent.closed, Bun.sleep(3000).then(() => null)])
    expect(closed).not.toBeNull()
    await expectProblem(await httpsHello(app, e.agent_token), 401, 'unauthorized')
    expect((await rawUpgrade(app, `Bearer ${e.agent_token}`)).status).toBe(401)

    expect((await listServers(app, free)).items).toEqual([])
    const kept = await getServer(app, free, e.server_id)
    expect(kept).toMatchObject({ presence: 'offline', decommissioned_at: out.decommissioned_at })
    expect((await serverEvents(app, free, e.server_id)).items.map((x) => x.kind)).toEqual(
      expect.arrayContaining(['server.decommissioned', 'presence.online', 'agent.enrolled']),
    )

    await mintInitToken(app, free)
    // Repeating it changes nothing; a decommissioned server takes no new configuration.
    expect((await ok<ServerDetail>(await api(app, free, 'POST', `/servers/${e.server_id}/decommission`))).decommissioned_at).toBe(out.decommissioned_at)
    await expectProblem(await api(app, free, 'PATCH', `/servers/${e.server_id}`, { json: { name: 'x' } }), 409, 'conflict')
    expect((await serverEvents(app, free, e.server_id, { kind: 'server.decommissioned' })).items).toHaveLength(1)
  })
})

describe('keep-on flags', () => {
  test('PUT and DELETE per marketplace, idempotent, shown on the detail; an unknown marketplace answers 422', async () => {
    const e = await enrolAgent(app, owner)
    const path = (m: string) => `/servers/${e.server_id}/keep-on/${m}`
    expect(await ok(await api(app, owner, 'PUT', path('marketplace_b')))).toEqual({ server_id: e.server_id, keep_on: ['marketplace_b'] })
    expect(await ok(await api(app, owner, 'PUT', path('marketplace_a')))).toEqual({ server_id: e.server_id, keep_on: ['marketplace_a', 'marketplace_b'] })
    expect(await ok(await api(app, owner, 'PUT', path('marketplace_a')))).toEqual({ server_id: e.server_id, keep_on: ['marketplace_a', 'marketplace_b'] })
    expect((await getServer(app, owner, e.server_id)).keep_on).toEqual(['marketplace_a', 'marketplace_b'])
    expect(await ok(await api(app, owner, 'DELETE', path('marketplace_a')))).toEqual({ server_id: e.server_id, keep_on: ['marketplace_b'] })
    expect(await ok(await api(app, owner, 'DELETE', path('marketplace_a')))).toEqual({ server_id: e.server_id, keep_on: ['marketplace_b'] })
    await expectProblem(await api(app, owner, 'PUT', path('marketplace_c')), 422, 'validation_failed')
    await expectProblem(await api(app, owner, 'DELETE', path('vast')), 422, 'validation_failed')
    expect((await getServer(app, owner, e.server_id)).keep_on).toEqual(['marketplace_b'])
  })
})

describe('maintenance', () => {
  test('declaring twice keeps since and updates the reason; the fleet row shows it; taking it back removes it', async () => {
    const e = await enrolAgent(app, owner)
    const path = `/servers/${e.server_id}/maintenance`
    const first = await ok<{ server_id: string; maintenance: { since: string; reason: string | null } }>(
      await api(app, owner, 'PUT', path, { json: { reason: 'replacing fans' } }),
    )
    expect(first.server_id).toBe(e.server_id)
    expect(first.maintenance.reason).toBe('replacing fans')
    await advance(app, 30)
    const second = await ok<typeof first>(await api(app, owner, 'PUT', path, { json: { reason: 'PSU swap' } }))
    expect(second.maintenance).toEqual({ since: first.maintenance.since, reason: 'PSU swap' })

    const row = (await listServers(app, owner)).items.find((r) => r.id === e.server_id)!
    expect(row.maintenance).toEqual({ since: first.maintenance.since, reason: 'PSU swap' })
    expect((await getServer(app, owner, e.server_id)).maintenance).toEqual({ since: first.maintenance.since, reason: 'PSU swap' })
    expect((await serverEvents(app, owner, e.server_id, { kind: 'maintenance.declared' })).items).toHaveLength(1)

    await expectProblem(await api(app, owner, 'PUT', path, { json: { reason: 'x'.repeat(257) } }), 422, 'validation_failed')
    const del = await api(app, owner, 'DELETE', path)
    expect(del.status).toBe(204)
    expect(await del.text()).toBe('')
    const after = (await listServers(app, owner)).items.find((r) => r.id === e.server_id)!
    expect(after).not.toHaveProperty('maintenance')
    expect(await getServer(app, owner, e.server_id)).not.toHaveProperty('maintenance')
    expect((await serverEvents(app, owner, e.server_id, { kind: 'maintenance.ended' })).items).toHaveLength(1)
    expect((await api(app, owner, 'DELETE', path)).status).toBe(204)

    // A declaration without a body has no reason, and a new declaration starts a new since.
    const again = await ok<typeof first>(await api(app, owner, 'PUT', path))
    expect(again.maintenance.reason).toBeNull()
    expect(again.maintenance.since > first.maintenance.since).toBe(true)
  })
})
