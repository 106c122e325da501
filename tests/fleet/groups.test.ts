import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { api, enrolAgent, listServers, newOwner, ok, stopApp, type Owner } from '../support/fleet'
import { expectProblem, UUID } from '../support/problem'

/** Server groups: list, create, detail, rename or reorder (If-Match), delete only when empty. */

let app: TestApp
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
})
afterAll(() => stopApp(app))

type Group = { id: string; name: string; position: number; servers: number; version: number; created_at: string }

const create = (owner: Owner, json: unknown) => api(app, owner, 'POST', '/groups', { json })
const names = async (owner: Owner) => (await ok<{ items: Group[] }>(await api(app, owner, 'GET', '/groups'))).items.map((g) => g.name)

describe('server groups', () => {
  test('a created group answers 201 with Location and ETag, and the list is ordered by position then name', async () => {
    const owner = await newOwner(app, 'groups', 'pro')
    const res = await create(owner, { name: '  Frankfurt ' })
    const fra = await ok<Group>(res, 201)
    expect(fra).toMatchObject({ name: 'Frankfurt', position: 1, servers: 0, version: 1 })
    expect(fra.id).toMatch(UUID)
    expect(res.headers.get('location')).toBe(`/api/v1/groups/${fra.id}`)
    expect(res.headers.get('etag')).toBe('"1"')
    const ams = await ok<Group>(create(owner, { name: 'Amsterdam' }), 201)
    expect(ams.position).toBe(2)
    await ok<Group>(create(owner, { name: 'Berlin', position: 2 }), 201)
    await ok<Group>(create(owner, { name: 'Zurich', position: 0 }), 201)
    expect(await names(owner)).toEqual(['Zurich', 'Frankfurt', 'Amsterdam', 'Berlin'])

    const detail = await api(app, owner, 'GET', `/groups/${fra.id}`)
    expect(await ok<Group>(detail)).toEqual(fra)
    expect(detail.headers.get('etag')).toBe('"1"')
  })

  test('a second group with the same name answers 409 conflict, on create and on rename', async () => {
    const owner = await newOwner(app, 'groups', 'pro')
    const a = await ok<Group>(create(owner, { name: 'Rack A' }), 201)
    await expectProblem(await create(owner, { name: 'Rack A' }), 409, 'conflict')
    await expectProblem(await create(owner, { name: ' Rack A ' }), 409, 'conflict')
    const b = await ok<Group>(create(owner, { name: 'Rack B' }), 201)
    await expectProblem(await api(app, owner, 'PATCH', `/groups/${b.id}`, { json: { name: 'Rack A' } }), 409, 'conflict')
    // Renaming a group to its own name is no conflict.
    expect((await ok<Group>(await api(app, owner, 'PATCH', `/groups/${a.id}`, { json: { name: 'Rack A' } }))).version).toBe(2)
    // Another tenant may use the same name.
    const other = await newOwner(app, 'groups-b', 'pro')
    await ok<Group>(create(other, { name: 'Rack A' }), 201)
  })

  test('renaming or reordering takes If-Match: the current tag succeeds, a stale one answers 412 and changes nothing', async () => {
    const owner = await newOwner(app, 'groups', 'pro')
    const g = await ok<Group>(create(owner, { name: 'Old name' }), 201)
    const res = await api(app, owner, 'PATCH', `/groups/${g.id}`, { json: { name: 'New name', position: 9 }, headers: { 'if-match': '"1"' } })
    expect(await ok<Group>(res)).toMatchObject({ id: g.id, name: 'New name', position: 9, version: 2 })
    expect(res.headers.get('etag')).toBe('"2"')
    await expectProblem(await api(app, owner, 'PATCH', `/groups/${g.id}`, { json: { name: 'Lost' }, headers: { 'if-match': '"1"' } }), 412, 'conflict')
    expect((await ok<Group>(await api(app, owner, 'GET', `/groups/${g.id}`))).name).toBe('New name')
    expect((await ok<Group>(await api(app, owner, 'PATCH', `/groups/${g.id}`, { json: { position: 3 } }))).position).toBe(3)
  })

  test('invalid bodies answer 422', async () => {
    const owner = await newOwner(app, 'groups', 'pro')
    const g = await ok<Group>(create(owner, { name: 'valid' }), 201)
    for (const body of [{}, { name: '' }, { name: 'x'.repeat(129) }, { name: 'a', colour: 'red' }, { name: 'a', position: -1 }, { name: 7 }])
      await expectProblem(await create(owner, body), 422, 'validation_failed')
    for (const body of [{}, { name: '' }, { position: 'first' }])
      await expectProblem(await api(app, owner, 'PATCH', `/groups/${g.id}`, { json: body }), 422, 'validation_failed')
    await expectProblem(await api(app, owner, 'GET', '/groups/not-a-uuid'), 422, 'validation_failed')
  })

  test('a group holding servers answers 409 conflict on delete; once empty it is deleted and answers 404 after', async () => {
    const owner = await newOwner(app, 'groups', 'pro')
    const g = await ok<Group>(create(owner, { name: 'Busy' }), 201)
    const e = await enrolAgent(app, owner)
    await ok(await api(app, owner, 'PATCH', `/servers/${e.server_id}`, { json: { group_id: g.id } }))
    expect((await ok<Group>(await api(app, owner, 'GET', `/groups/${g.id}`))).servers).toBe(1)
    await expectProblem(await api(app, owner, 'DELETE', `/groups/${g.id}`), 409, 'conflict')
    expect(await names(owner)).toEqual(['Busy'])

    await ok(await api(app, owner, 'PATCH', `/servers/${e.server_id}`, { json: { group_id: null } }))
    const del = await api(app, owner, 'DELETE', `/groups/${g.id}`)
    expect(del.status).toBe(204)
    await expectProblem(await api(app, owner, 'GET', `/groups/${g.id}`), 404, 'not_found')
    await expectProblem(await api(app, owner, 'DELETE', `/groups/${g.id}`), 404, 'not_found')
    expect(await names(owner)).toEqual([])
  })

  test('a decommissioned server does not keep its group from being deleted, and the fleet forgets the group', async () => {
    const owner = await newOwner(app, 'groups', 'pro')
    const g = await ok<Group>(create(owner, { name: 'Retired' }), 201)
    const e = await enrolAgent(app, owner)
    await ok(await api(app, owner, 'PATCH', `/servers/${e.server_id}`, { json: { group_id: g.id } }))
    await ok(await api(app, owner, 'POST', `/servers/${e.server_id}/decommission`))
    expect((await ok<Group>(await api(app, owner, 'GET', `/groups/${g.id}`))).servers).toBe(0)
    expect((await api(app, owner, 'DELETE', `/groups/${g.id}`)).status).toBe(204)
    expect((await ok<{ group_id: string | null }>(await api(app, owner, 'GET', `/servers/${e.server_id}`))).group_id).toBeNull()
    expect((await listServers(app, owner, { group_id: g.id })).items).toEqual([])
  })
})
