import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { advance, api, enrolAgent, eventually, listServers, newOwner, ok, RawAgent, runJob, stopApp, type FleetList, type Owner } from '../support/fleet'
import { expectProblem } from '../support/problem'

/** GET /servers and GET /dashboard: the snapshot envelope, its caching, every filter and pagination. */

let app: TestApp
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
})
afterAll(() => stopApp(app))

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/
const ROW_FIELDS = [
  'agent_version',
  'avg_util_pct',
  'fsm_state',
  'gpu_count',
  'gpu_model',
  'gpu_vitals',
  'group_id',
  'health',
  'id',
  'last_seen_at',
  'marketplace',
  'max_fan_pct',
  'max_temp_core_c',
  'max_temp_hotspot_c',
  'max_temp_vram_c',
  'name',
  'open_incidents',
  'presence',
  'price_usd_gpu_h',
  'rental_state',
  'rented_gpu_count',
  'revenue_today_usd',
  'tags',
]
const ids = (list: FleetList) => list.items.map((r) => r.id)

async function named(owner: Owner, name: string, hostname = `${name}.local`, gpus = 2) {
  const e = await enrolAgent(app, owner, { hostname, gpus: Array.from({ length: gpus }, (_, i) => ({ index: i, model: 'NVIDIA A100' })) })
  await ok(await api(app, owner, 'PATCH', `/servers/${e.server_id}`, { json: { name } }))
  return e
}

describe('the snapshot envelope', () => {
  test('carries generated_at, data_as_of, version, stale and stale_reason, an ETag, and one row per managed server ordered by name', async () => {
    const owner = await newOwner(app, 'envelope', 'pro')
    const b = await named(owner, 'beta')
    const a = await named(owner, 'alpha', 'alpha.local', 4)
    const res = await api(app, owner, 'GET', '/servers')
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toMatch(/^"[^"]{1,254}"$/)
    const body = (await res.json()) as FleetList
    expect(body.generated_at).toMatch(TIMESTAMP)
    expect(body.data_as_of).toMatch(TIMESTAMP)
    expect(Number.isInteger(body.version)).toBe(true)
    expect(body).toMatchObject({ stale: false, stale_reason: null, next_cursor: null })
    expect(ids(body)).toEqual([a.server_id, b.server_id])
    const row = body.items[0]!
    expect(Object.keys(row).sort()).toEqual(ROW_FIELDS)
    expect(row).toMatchObject({
      name: 'alpha',
      agent_version: '1.4.0',
      gpu_count: 4,
      gpu_model: 'NVIDIA A100',
      fsm_state: 'new',
      presence: 'offline',
      marketplace: null,
      price_usd_gpu_h: null,
      // Never connected: offline outside maintenance (docs/fleet.md "health").
      health: 'critical',
      last_seen_at: null,
      revenue_today_usd: '0.00',
      group_id: null,
      tags: [],
      rental_state: null,
      rented_gpu_count: 0,
      open_incidents: 0,
    })
    // One entry per GPU, ordered by index, nulls until the agent reports.
    expect(row.gpu_vitals).toEqual([0, 1, 2, 3].map((index) => ({ index, temp_c: null, fan_pct: null })))
  })

  test('If-None-Match with the current tag answers 304 without a body; another query or a change answers 200 again', async () => {
    const owner = await newOwner(app, 'etag', 'pro')
    const e = await named(owner, 'gamma')
    const first = await api(app, owner, 'GET', '/servers')
    const tag = first.headers.get('etag')!
    await first.text()
    const again = await api(app, owner, 'GET', '/servers', { headers: { 'if-none-match': tag } })
    expect(again.status).toBe(304)
    expect(again.headers.get('etag')).toBe(tag)
    expect(await again.text()).toBe('')
    expect((await api(app, owner, 'GET', '/servers', { headers: { 'if-none-match': `W/${tag}` } })).status).toBe(304)
    const other = await api(app, owner, 'GET', '/servers?presence=online', { headers: { 'if-none-match': tag } })
    expect(other.status).toBe(200)
    expect(other.headers.get('etag')).not.toBe(tag)
    await other.text()
    await ok(await api(app, owner, 'PATCH', `/servers/${e.server_id}`, { json: { name: 'gamma-2' } }))
    const changed = await api(app, owner, 'GET', '/servers', { headers: { 'if-none-match': tag } })
    expect(changed.status).toBe(200)
    expect(((await changed.json()) as FleetList).items[0]!.name).toBe('gamma-2')
  })

  test('a snapshot older than 60 s is served at once with stale true and a reason, and the refresh behind it clears that', async () => {
    const owner = await newOwner(app, 'swr', 'pro')
    const e = await named(owner, 'delta')
    const fresh = await listServers(app, owner)
    expect(fresh.stale).toBe(false)
    await advance(app, 61)
    const staleRes = await api(app, owner, 'GET', '/servers')
    const stale = (await staleRes.json()) as FleetList
    expect(stale.stale).toBe(true)
    expect(typeof stale.stale_reason).toBe('string')
    expect(stale.stale_reason!.length).toBeGreaterThan(0)
    expect(stale.stale_reason!.length).toBeLessThanOrEqual(256)
    expect(stale.generated_at).toBe(fresh.generated_at)
    expect(ids(stale)).toEqual([e.server_id])
    const refreshed = await eventually(async () => {
      const l = await listServers(app, owner)
      return l.stale ? null : l
    })
    expect(refreshed.stale_reason).toBeNull()
    expect(refreshed.generated_at > fresh.generated_at).toBe(true)
    expect(refreshed.items).toEqual(stale.items)
    // The stale copy and the fresh one are different representations.
    const fresher = await api(app, owner, 'GET', '/servers', { headers: { 'if-none-match': staleRes.headers.get('etag')! } })
    expect(fresher.status).toBe(200)
  })

  test('the fleet.snapshot job refreshes the snapshot, and a PATCH shows in the next read at once', async () => {
    const owner = await newOwner(app, 'patch', 'pro')
    const e = await named(owner, 'epsilon')
    const before = await listServers(app, owner)
    await advance(app, 61)
    await runJob(app, 'fleet.snapshot')
    const after = await listServers(app, owner)
    expect(after.stale).toBe(false)
    expect(after.generated_at > before.generated_at).toBe(true)
    await ok(await api(app, owner, 'PATCH', `/servers/${e.server_id}`, { json: { name: 'epsilon-renamed', tags: ['site:fra'] } }))
    const patched = await listServers(app, owner)
    expect(patched.items[0]).toMatchObject({ name: 'epsilon-renamed', tags: ['site:fra'] })
  })
})

describe('filters', () => {
  let owner: Owner
  let s: Record<string, string>
  let groupId: string
  beforeAll(async () => {
    owner = await newOwner(app, 'filters', 'pro')
    const rig = await named(owner, 'Rig-Alpha', 'gpu-box-01.fra.example')
    const lab = await named(owner, 'lab-beta', 'LAB-02.ams.example')
    const spare = await named(owner, 'spare', 'spare.ams.example')
    groupId = (await ok<{ id: string }>(await api(app, owner, 'POST', '/groups', { json: { name: 'Frankfurt' } }), 201)).id
    await ok(await api(app, owner, 'PATCH', `/servers/${rig.server_id}`, { json: { group_id: groupId, tags: ['gpu:4090', 'site:fra', 'owned'] } }))
    await ok(await api(app, owner, 'PATCH', `/servers/${lab.server_id}`, { json: { tags: ['gpu', 'site:ams'] } }))
    s = { rig: rig.server_id, lab: lab.server_id, spare: spare.server_id }
    // rig online, lab suspect, spare offline.
    const rigAgent = (await RawAgent.start(app, rig.agent_token, rig.facts)).agent
    const labAgent = (await RawAgent.start(app, lab.agent_token, lab.facts)).agent
    rigAgent.heartbeat()
    labAgent.heartbeat()
    await Promise.all([rigAgent.barrier(), labAgent.barrier()])
    await advance(app, 61)
    rigAgent.heartbeat()
    await rigAgent.barrier()
    await runJob(app, 'presence.sweep')
  })

  const cases: [string, Record<string, string>, string[]][] = [
    ['no filter', {}, ['rig', 'lab', 'spare']],
    ['presence=online', { presence: 'online' }, ['rig']],
    ['presence=suspect', { presence: 'suspect' }, ['lab']],
    ['presence=offline', { presence: 'offline' }, ['spare']],
    ['fsm_state=new', { fsm_state: 'new' }, ['rig', 'lab', 'spare']],
    ['fsm_state=other', { fsm_state: 'rented' }, []],
    ['marketplace=marketplace_a (nothing is assigned)', { marketplace: 'marketplace_a' }, []],
    ['group_id', { group_id: 'GROUP' }, ['rig']],
    ['group_id of no group', { group_id: '01a00000-0000-7000-8000-000000000000' }, []],
    ['tag by key matches key and key:value', { tag: 'gpu' }, ['rig', 'lab']],
    ['tag by key:value', { tag: 'gpu:4090' }, ['rig']],
    ['tag by key:value with another value', { tag: 'site:ams' }, ['lab']],
    ['tag that is only a prefix', { tag: 'gp' }, []],
    ['tag key that is only set bare', { tag: 'owned' }, ['rig']],
    ['q on the name, case-insensitive', { q: 'rig-ALPHA' }, ['rig']],
    ['q on the hostname, case-insensitive', { q: 'lab-02.AMS' }, ['lab']],
    ['q matching several hostnames', { q: '.ams.' }, ['lab', 'spare']],
    ['q matching nothing', { q: 'zzz' }, []],
    ['presence and tag together', { presence: 'online', tag: 'site:fra' }, ['rig']],
    ['presence and q that exclude each other', { presence: 'offline', q: 'rig' }, []],
  ]
  test.each(cases)('%s', async (_name, query, expected) => {
    const q = Object.fromEntries(Object.entries(query).map(([k, v]) => [k, v === 'GROUP' ? groupId : v]))
    const list = await listServers(app, owner, q)
    expect(list.items.map((r) => Object.keys(s).find((k) => s[k] === r.id)).sort()).toEqual([...expected].sort())
  })

  test('invalid filter values answer 422', async () => {
    for (const q of ['presence=asleep', 'group_id=not-a-uuid', `q=${'x'.repeat(129)}`, `tag=${'t'.repeat(129)}`, `fsm_state=${'f'.repeat(65)}`])
      await expectProblem(await api(app, owner, 'GET', `/servers?${q}`), 422, 'validation_failed')
  })
})

describe('pagination', () => {
  test('limit and next_cursor walk every row once in name order; a tampered or foreign cursor answers 422', async () => {
    const owner = await newOwner(app, 'pages', 'pro')
    for (const n of ['p5', 'p1', 'p4', 'p2', 'p3']) await named(owner, n)
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const page: FleetList = await listServers(app, owner, { limit: '2', ...(cursor ? { cursor } : {}) })
      expect(page.items.length).toBeLessThanOrEqual(2)
      seen.push(...page.items.map((r) => r.name))
      cursor = page.next_cursor
      pages++
    } while (cursor && pages < 10)
    expect(pages).toBe(3)
    expect(seen).toEqual(['p1', 'p2', 'p3', 'p4', 'p5'])

    const first = await listServers(app, owner, { limit: '2' })
    const c = first.next_cursor!
    await expectProblem(await api(app, owner, 'GET', `/servers?limit=2&cursor=${c.slice(0, -1)}${c.endsWith('A') ? 'B' : 'A'}`), 422, 'validation_failed')
    await expectProblem(await api(app, owner, 'GET', `/servers?limit=2&cursor=${c}&q=p`), 422, 'validation_failed')
    const stranger = await newOwner(app, 'pages-b', 'pro')
    await expectProblem(await api(app, stranger, 'GET', `/servers?limit=2&cursor=${c}`), 422, 'validation_failed')
    for (const limit of ['0', '201', 'ten']) await expectProblem(await api(app, owner, 'GET', `/servers?limit=${limit}`), 422, 'validation_failed')
    expect((await listServers(app, owner, { limit: '200' })).items).toHaveLength(5)
  })
})

describe('the dashboard', () => {
  test('counts servers by presence and maintenance, GPUs by model and servers per group, with ETag and 304', async () => {
    const owner = await newOwner(app, 'dash', 'pro')
    const online = await named(owner, 'd-online', 'd1', 4)
    const offline = await named(owner, 'd-offline', 'd2', 2)
    await enrolAgent(app, owner, { gpus: [{ index: 0, model: 'NVIDIA H100' }] })
    const group = await ok<{ id: string }>(await api(app, owner, 'POST', '/groups', { json: { name: 'dash' } }), 201)
    await ok(await api(app, owner, 'PATCH', `/servers/${online.server_id}`, { json: { group_id: group.id } }))
    await ok(await api(app, owner, 'PUT', `/servers/${offline.server_id}/maintenance`, { json: { reason: 'fans' } }))
    const { agent } = await RawAgent.start(app, online.agent_token, online.facts)
    agent.heartbeat()
    await agent.barrier()

    const res = await api(app, owner, 'GET', '/dashboard')
    const tag = res.headers.get('etag')!
    const body = await ok<Record<string, any>>(res)
    expect(body).toMatchObject({ stale: false, stale_reason: null, revenue_today_usd: '0.00' })
    expect(body.generated_at).toMatch(TIMESTAMP)
    // The offline server in maintenance is a warning, the other offline one critical (docs/fleet.md "health").
    expect(body.servers).toEqual({
      total: 3,
      online: 1,
      suspect: 0,
      offline: 2,
      in_maintenance: 1,
      rented: 0,
      idle: 0,
      health: { ok: 1, warning: 1, critical: 1 },
    })
    expect(body.gpus).toEqual({
      total: 7,
      rented: 0,
      idle: 0,
      unlisted: 4,
      offline: 3,
      by_model: [
        { model: 'NVIDIA A100', count: 6 },
        { model: 'NVIDIA H100', count: 1 },
      ],
    })
    expect(body.groups).toEqual(
      expect.arrayContaining([
        { group_id: group.id, servers: 1 },
        { group_id: null, servers: 2 },
      ]),
    )

    const cached = await api(app, owner, 'GET', '/dashboard', { headers: { 'if-none-match': tag } })
    expect(cached.status).toBe(304)
    expect(await cached.text()).toBe('')
    await agent.close()
    await eventually(async () => (await api(app, owner, 'GET', '/dashboard', { headers: { 'if-none-match': tag } })).status === 200)
    expect((await ok<Record<string, any>>(await api(app, owner, 'GET', '/dashboard'))).servers).toMatchObject({ online: 0, offline: 3 })
  })
})
