import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { evidenceOf, portRangeSize, type KnownFacts } from '../../src/modules/marketplaces/links/candidates.service'
import { call, insertServer, mintPat, type Caller, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { enrolAgent, newOwner, type Owner } from '../support/fleet'

/**
 * Issue 16, candidates: GET /marketplaces/links/candidates asks the platform live (both simulators,
 * over real HTTP) and ranks every machine against the server's own registration facts. A fact
 * missing on either side never matches; gpu is model and count; disk within 15 %; ports by size.
 */

const KEY_A = 'vast-cand-key-0123456789abcdef'
const KEY_B = 'clore-cand-key-0123456789abcdef'
const NO_OFFERS = { rented_amount: 0, rented_on_marketplace_amount: 0, rented_finished_amount: 0, leased_amount: 0, leased_finished_amount: 0 }

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Owner
let member: Member
let server: string
const answers: string[] = []

type Candidate = {
  external_machine_id: string
  hostname: string | null
  gpu: string | null
  gpu_count: number | null
  gpu_occupancy: string | null
  linked_server_id: string | null
  evidence: Record<'hostname' | 'public_ip' | 'gpu' | 'disk' | 'ports', boolean>
  matched: number
  suggested: boolean
}
type Answer = { candidates: Candidate[]; known: Record<string, unknown> }

async function candidates(caller: Caller, serverId: string, marketplace: string): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await call(app, 'GET', `/marketplaces/links/candidates?server_id=${serverId}&marketplace=${marketplace}`, caller)
  const text = await res.text()
  answers.push(text)
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers }
}

beforeAll(async () => {
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: 4242, email: 'host@example.com', keys: [{ key: KEY_A, label: 'cand' }] }] })
  // The server's facts: "Rig-Alpha", 203.0.113.7, 2 × RTX 4090, 4000 GB, 20 ports (40000-40019).
  const five = { hostname: 'rig-alpha', public_ipaddr: '203.0.113.7', gpu_name: 'RTX 4090', num_gpus: 2, disk_space: 3700, direct_port_count: 20 }
  simA.putMachine(4242, 101, { ...five, gpu_occupancy: 'DD' })
  simA.putMachine(4242, 102, { ...five, direct_port_count: 100 })
  simA.putMachine(4242, 99, { hostname: 'RIG-ALPHA', gpu_name: 'RTX 4090', num_gpus: 2, direct_port_count: 20 })
  simA.putMachine(4242, 103, { hostname: 'other', public_ipaddr: '198.51.100.1', gpu_name: 'RTX 4090', num_gpus: 2, disk_space: 4550, direct_port_count: 20 })
  simA.putMachine(4242, 104, {
    hostname: 'Rig-Alpha',
    public_ipaddr: '203.0.113.7',
    gpu_name: 'RTX 4090',
    num_gpus: 1,
    disk_space: 2000,
    direct_port_count: 21,
  })
  simA.putMachine(4242, 105, { hostname: 'b', gpu_name: 'RTX 3090', num_gpus: 2, disk_space: 4700, direct_port_count: 20 })
  simA.putMachine(4242, 106, { gpu_name: 'A100', num_gpus: 8 })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    owners: {
      [KEY_B]: {
        label: 'cand',
        userId: 78,
        poh: { balance: { total: 0, free_amount: 0, reward_amount: 0, offers: NO_OFFERS } },
        servers: [
          { name: 'RIG-ALPHA', id: 51, online: true, specs: { gpu: '2x GeForce RTX 4090', disk: 'NVMe 4TB' }, extra: { public_ip: '203.0.113.7' } },
          { name: 'other-box', id: 52, online: true, specs: { gpu: '1x GeForce RTX 3090', disk: 'SSD 512GB' } },
        ],
      },
    },
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url })
  owner = await newOwner(app, 'cand', 'pro')
  member = { ...owner, role: 'owner' }
  const gpus = [0, 1].map((index) => ({ index, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24564, uuid: `GPU-cand-${index}` }))
  server = (await enrolAgent(app, owner, { hostname: 'Rig-Alpha', public_ip: '203.0.113.7', disk_gb: 4000, port_range: '40000-40019', gpus })).server_id
  for (const [marketplace, key] of [
    ['marketplace_a', KEY_A],
    ['marketplace_b', KEY_B],
  ] as const) {
    const res = await call(app, 'PUT', `/marketplaces/${marketplace}`, member, { json: { api_key: key } })
    answers.push(await res.text())
    expect(res.status).toBe(200)
  }
})
afterAll(async () => {
  await app?.close()
  await simA?.stop()
  await simB?.stop()
})

describe('the evidence rule', () => {
  const known: KnownFacts = {
    hostname: 'Rig-Alpha',
    public_ip: '203.0.113.7',
    gpu: 'NVIDIA GeForce RTX 4090',
    gpu_count: 2,
    gpu_occupancy: null,
    disk_gb: 4000,
    port_range: '40000-40019',
  }
  const facts = { hostname: 'RIG-ALPHA', public_ip: '203.0.113.7', gpu_model: 'rtx_4090', gpu_count: 2, disk_gb: 4000, port_range_size: 20 }
  const all = { hostname: true, public_ip: true, gpu: true, disk: true, ports: true }

  test('every fact agrees: hostname case-insensitively, the gpu model normalised on the server side', () => {
    expect(evidenceOf(known, facts)).toEqual(all)
  })

  test('a fact missing on either side never matches, even when both sides miss it', () => {
    const none = { hostname: null, public_ip: null, gpu_model: null, gpu_count: null, disk_gb: null, port_range_size: null }
    const unknown: KnownFacts = { hostname: null, public_ip: null, gpu: null, gpu_count: null, gpu_occupancy: null, disk_gb: null, port_range: null }
    const nothing = { hostname: false, public_ip: false, gpu: false, disk: false, ports: false }
    expect(evidenceOf(known, none)).toEqual(nothing)
    expect(evidenceOf(unknown, facts)).toEqual(nothing)
    expect(evidenceOf(unknown, none)).toEqual(nothing)
  })

  test('gpu needs the model and the count', () => {
    expect(evidenceOf(known, { ...facts, gpu_count: 1 }).gpu).toBe(false)
    expect(evidenceOf(known, { ...facts, gpu_model: 'rtx_3090' }).gpu).toBe(false)
    expect(evidenceOf({ ...known, gpu_count: null }, facts).gpu).toBe(false)
  })

  test('disk agrees within 15 % of the server’s size, either way', () => {
    expect(evidenceOf(known, { ...facts, disk_gb: 3400 }).disk).toBe(true)
    expect(evidenceOf(known, { ...facts, disk_gb: 4600 }).disk).toBe(true)
    expect(evidenceOf(known, { ...facts, disk_gb: 3399 }).disk).toBe(false)
    expect(evidenceOf(known, { ...facts, disk_gb: 4601 }).disk).toBe(false)
  })

  test('ports compare the size of the range, never its bounds', () => {
    expect(portRangeSize('40000-40019')).toBe(20)
    expect(portRangeSize('50000-50019')).toBe(20)
    expect(portRangeSize('40000')).toBe(1)
    expect(portRangeSize('40019-40000')).toBeNull()
    expect(portRangeSize('many')).toBeNull()
    expect(evidenceOf({ ...known, port_range: '50000-50019' }, facts).ports).toBe(true)
    expect(evidenceOf(known, { ...facts, port_range_size: 19 }).ports).toBe(false)
  })
})

describe('GET /marketplaces/links/candidates', () => {
  test('marketplace_a: every machine ranked strongest first, suggested from three facts, with the server’s known facts', async () => {
    const { status, body } = await candidates(member, server, 'marketplace_a')
    expect(status).toBe(200)
    const got = body as Answer
    expect(got.known).toEqual({
      hostname: 'Rig-Alpha',
      public_ip: '203.0.113.7',
      gpu: 'NVIDIA GeForce RTX 4090',
      gpu_count: 2,
      gpu_occupancy: null,
      disk_gb: 4000,
      port_range: '40000-40019',
    })
    expect(got.candidates.map((c) => [c.external_machine_id, c.matched, c.suggested])).toEqual([
      ['101', 5, true],
      ['102', 4, true],
      ['99', 3, true],
      ['103', 3, true],
      ['104', 2, false],
      ['105', 1, false],
      ['106', 0, false],
    ])
    const byId = new Map(got.candidates.map((c) => [c.external_machine_id, c]))
    expect(byId.get('101')).toEqual({
      external_machine_id: '101',
      hostname: 'rig-alpha',
      gpu: 'RTX 4090',
      gpu_count: 2,
      gpu_occupancy: 'DD',
      linked_server_id: null,
      evidence: { hostname: true, public_ip: true, gpu: true, disk: true, ports: true },
      matched: 5,
      suggested: true,
    })
    // 102: the same facts but 100 ports; 103: 4550 GB is within 15 % of 4000; 104: one card of two,
    // 2000 GB and 21 ports; 105: 4700 GB is 17.5 % over; 106 sends no hostname, address or disk.
    expect(byId.get('102')!.evidence).toEqual({ hostname: true, public_ip: true, gpu: true, disk: true, ports: false })
    expect(byId.get('103')!.evidence).toEqual({ hostname: false, public_ip: false, gpu: true, disk: true, ports: true })
    expect(byId.get('104')!.evidence).toEqual({ hostname: true, public_ip: true, gpu: false, disk: false, ports: false })
    expect(byId.get('105')!.evidence).toEqual({ hostname: false, public_ip: false, gpu: false, disk: false, ports: true })
    expect(byId.get('106')).toMatchObject({ hostname: null, gpu: 'A100', gpu_count: 8, gpu_occupancy: null })
  })

  test('marketplace_b: the same rule against Clore, which tells no port range (ports never match there)', async () => {
    const { status, body } = await candidates(member, server, 'marketplace_b')
    expect(status).toBe(200)
    const got = body as Answer
    expect(got.candidates.map((c) => [c.hostname, c.matched, c.suggested])).toEqual([
      ['RIG-ALPHA', 4, true],
      ['other-box', 0, false],
    ])
    expect(got.candidates[0]).toMatchObject({
      gpu: 'GeForce RTX 4090',
      gpu_count: 2,
      evidence: { hostname: true, public_ip: true, gpu: true, disk: true, ports: false },
    })
  })

  test('a server without a public address and a machine without a hostname never match on those facts', async () => {
    const bare = (await enrolAgent(app, owner, { hostname: 'rig-alpha', public_ip: null, disk_gb: null, port_range: null })).server_id
    const { status, body } = await candidates(member, bare, 'marketplace_a')
    expect(status).toBe(200)
    const got = body as Answer
    expect(got.known).toMatchObject({ public_ip: null, disk_gb: null, port_range: null })
    for (const c of got.candidates) {
      expect(c.evidence.public_ip).toBe(false)
      expect(c.evidence.disk).toBe(false)
      expect(c.evidence.ports).toBe(false)
    }
    expect(got.candidates.find((c) => c.external_machine_id === '106')!.evidence.hostname).toBe(false)
    // A server the agent never registered has no facts at all: nothing matches.
    const blank = await insertServer(app, owner.tenantId, 'not enrolled')
    const none = (await candidates(member, blank, 'marketplace_a')).body as Answer
    expect(none.known).toEqual({ hostname: null, public_ip: null, gpu: null, gpu_count: null, gpu_occupancy: null, disk_gb: null, port_range: null })
    expect(none.candidates.every((c) => c.matched === 0 && !c.suggested)).toBe(true)
  })

  test('a machine already linked names the server that holds it', async () => {
    const holder = await insertServer(app, owner.tenantId, 'holder')
    const account = (await app.deps.db.get<{ id: string }>(
      sql`SELECT id FROM marketplace_accounts WHERE tenant_id = ${owner.tenantId} AND marketplace = 'marketplace_a'`,
    ))!
    const now = app.deps.clock.nowUs()
    await app.deps.db.run(
      sql`INSERT INTO marketplace_links (id, tenant_id, server_id, marketplace, account_id, external_machine_id, bind_mode, state, linked_at, remote) VALUES (${app.deps.newId()}, ${owner.tenantId}, ${holder}, 'marketplace_a', ${account.id}, '102', 'manual', 'linked', ${now}, '{}')`,
    )
    const got = (await candidates(member, server, 'marketplace_a')).body as Answer
    expect(got.candidates.find((c) => c.external_machine_id === '102')!.linked_server_id).toBe(holder)
    expect(got.candidates.filter((c) => c.linked_server_id !== null).map((c) => c.external_machine_id)).toEqual(['102'])
  })

  test('every query asks the platform again (no cache) and lands in the operations log under the server', async () => {
    simA.clearRequests()
    await candidates(member, server, 'marketplace_a')
    simA.putMachine(4242, 107, { hostname: 'new' })
    const again = (await candidates(member, server, 'marketplace_a')).body as Answer
    expect(again.candidates.map((c) => c.external_machine_id)).toContain('107')
    expect(simA.requests().filter((r) => r.path.startsWith('/api/v0/machines')).length).toBe(2)
    simA.removeMachine(107)
    const res = await call(app, 'GET', `/servers/${server}/operations`, member)
    const text = await res.text()
    answers.push(text)
    const ops = JSON.parse(text) as { items: { marketplace: string; operation: string; server_id: string; outcome: string }[] }
    expect(ops.items.length).toBeGreaterThanOrEqual(4)
    expect(ops.items.every((o) => o.server_id === server)).toBe(true)
    expect(ops.items.filter((o) => o.marketplace === 'marketplace_a').map((o) => o.operation)).toContain('machines.list')
    expect(ops.items.filter((o) => o.marketplace === 'marketplace_b').map((o) => o.operation)).toContain('servers.list')
  })

  test('a marketplace with no account connected answers 409', async () => {
    const other = await newOwner(app, 'cand-none', 'pro')
    const otherMember: Member = { ...other, role: 'owner' }
    const rig = await insertServer(app, other.tenantId, 'lonely')
    const { status, body } = await candidates(otherMember, rig, 'marketplace_a')
    expect(status).toBe(409)
    expect(body.code).toBe('conflict')
    expect(body.detail).toContain('no account is connected')
  })

  test('another tenant’s server, or an unknown one, is 404; bad queries are 422', async () => {
    const stranger = await newOwner(app, 'cand-stranger', 'pro')
    const strangerMember: Member = { ...stranger, role: 'owner' }
    expect((await candidates(strangerMember, server, 'marketplace_a')).status).toBe(404)
    expect((await candidates(member, '0190f000-0000-7000-8000-000000000000', 'marketplace_a')).status).toBe(404)
    expect((await candidates(member, server, 'marketplace_c')).status).toBe(422)
    expect((await candidates(member, 'not-a-uuid', 'marketplace_a')).status).toBe(422)
    expect((await call(app, 'GET', '/marketplaces/links/candidates', member)).status).toBe(422)
  })

  test('tokens need marketplaces:read; an allowlisted token reaches only its own servers', async () => {
    const reader = (await mintPat(app, member, { scopes: ['marketplaces:read'] })).token
    expect((await candidates(reader, server, 'marketplace_a')).status).toBe(200)
    const noScope = (await mintPat(app, member, { scopes: ['servers:read'] })).token
    expect((await candidates(noScope, server, 'marketplace_a')).status).toBe(403)
    const other = await insertServer(app, owner.tenantId, 'allowed')
    const allowlisted = (await mintPat(app, member, { scopes: ['marketplaces:read'], server_allowlist: [other] })).token
    const outside = await candidates(allowlisted, server, 'marketplace_a')
    expect(outside.status).toBe(404)
    expect(JSON.stringify(outside.body)).not.toContain(server)
    expect((await candidates(allowlisted, other, 'marketplace_a')).status).toBe(200)
    expect((await candidates(null, server, 'marketplace_a')).status).toBe(401)
  })

  test('a platform that is down answers 503 with Retry-After, and the failed calls are logged under the server', async () => {
    for (const [sim, marketplace] of [
      [simA, 'marketplace_a'],
      [simB, 'marketplace_b'],
    ] as const) {
      await sim.setMode('5xx')
      try {
        const { status, body, headers } = await candidates(member, server, marketplace)
        expect({ marketplace, status, code: body.code }).toEqual({ marketplace, status: 503, code: 'temporarily_unavailable' })
        expect(headers.get('retry-after')).toMatch(/^\d+$/)
      } finally {
        await sim.setMode('ok')
      }
    }
    const ops = (await (await call(app, 'GET', `/servers/${server}/operations`, member)).json()) as { items: { server_id: string; outcome: string }[] }
    expect(ops.items.some((o) => o.outcome === 'unavailable' && o.server_id === server)).toBe(true)
  })

  test('a stored key the platform now rejects answers 409 and marks the connection invalid_key, as the sync would', async () => {
    type Conn = { marketplace: string; status: string; key_hash: string; last_failure: string | null; last_failure_at: string | null }
    const accounts = async () => ((await (await call(app, 'GET', '/marketplaces/accounts', member)).json()) as { items: Conn[] }).items
    const before = (await accounts()).find((c) => c.marketplace === 'marketplace_b')!
    simB.removeOwner(KEY_B)
    try {
      const { status, body } = await candidates(member, server, 'marketplace_b')
      expect(status).toBe(409)
      expect(body.code).toBe('conflict')
      expect(body.detail).toContain('rejected the stored key')
    } finally {
      simB.addOwner(KEY_B, { label: 'cand', userId: 78, servers: [{ name: 'RIG-ALPHA', id: 51, online: true }] })
    }
    const after = (await accounts()).find((c) => c.marketplace === 'marketplace_b')!
    expect(after).toMatchObject({ status: 'invalid_key', key_hash: before.key_hash })
    expect(after.last_failure).toMatch(/rejected the key/)
    // An invalid key is not sent again: the next request is refused without asking the platform.
    simB.clearRequests()
    expect((await candidates(member, server, 'marketplace_b')).status).toBe(409)
    expect(simB.requests).toEqual([])
    // Re-sending the key (now accepted again) reconnects.
    expect((await call(app, 'PUT', '/marketplaces/marketplace_b', member, { json: { api_key: KEY_B } })).status).toBe(200)
    expect((await candidates(member, server, 'marketplace_b')).status).toBe(200)
  })

  test('a missing or unknown marketplace is 422, never a default marketplace', async () => {
    for (const qs of [`server_id=${server}`, `server_id=${server}&marketplace=marketplace_c`]) {
      const res = await call(app, 'GET', `/marketplaces/links/candidates?${qs}`, member)
      expect(res.status).toBe(422)
      expect(((await res.json()) as { code: string }).code).toBe('validation_failed')
    }
  })

  test('no key appears in any answer or log line', () => {
    const everything = [...answers, ...app.rawLogs].join('\n')
    expect(everything).not.toContain(KEY_A)
    expect(everything).not.toContain(KEY_B)
  })
})
