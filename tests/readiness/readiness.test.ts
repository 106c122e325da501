import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import type { MachineFields } from '../../scripts/sim/marketplace-a.types'
import { startTestApp, type TestApp } from '../support/app'
import { api, enrolAgent, httpsHello, newOwner, ok, type Facts, type Owner } from '../support/fleet'

/**
 * Issue 39, readiness (docs/readiness.md): GET /servers/{id}/readiness and GET /readiness over real
 * HTTP, the marketplace_a simulator speaking Vast's machine fields and a server whose agent said
 * hello with its facts. A machine meeting every threshold is ready; each threshold at, just above
 * and just below flips exactly its own item (the VRAM-scaled bandwidth floor at three VRAM sizes);
 * a driver change between two facts reports is one regression incident with one notification.
 */

const KEY = 'vast-readiness-key-0123456789abcdef'
const MACHINE = 601

/** 4 × 24 GiB = 96 GiB of VRAM: the bandwidth floor is 500 × 96 ÷ 192 = 250 Mb/s; system memory needs 0.95 × 98304 = 93388.8 MiB. */
const GOOD: MachineFields = {
  hostname: 'rig-ready',
  listed: true,
  verification: 'verified',
  reliability2: 0.97,
  gpu_name: 'RTX 4090',
  num_gpus: 4,
  gpu_ram: 24576,
  gpu_total_ram: 98304,
  cuda_max_good: 12.4,
  driver_version: '550.54.15',
  direct_port_count: 200,
  pcie_bw: 25.1,
  inet_up: 800,
  inet_down: 900,
  cpu_ram: 257000,
  cpu_cores: 64,
  error_description: null,
}

const HOST = {
  driver_version: '550.54.15',
  cuda_version: '12.4',
  cpu_cores: 64,
  ram_mb: 257000,
  disk_free_gb: 800,
  docker_disk_free_gb: 700,
  port_range: '40000-40199',
  gpus: [0, 1, 2, 3].map((index) => ({ index, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24576, uuid: `GPU-ready-${index}` })),
}

type Item = { id: string; status: string; value: string | null; threshold: string; value_source: string | null; required: boolean; action: string | null }
type Entry = { marketplace: string; linked: boolean; status: string; items: Item[] }
type Readiness = { server_id: string; status: string; marketplaces: Entry[] }

let sim: MarketplaceASim
let app: TestApp
let owner: Owner
let stranger: Owner
let serverId: string
let agentToken: string

const job = (name: string) => ok<{ outcome: string; detail: string }>(app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' }))

async function readiness(): Promise<Entry> {
  const r = await ok<Readiness>(await api(app, owner, 'GET', `/servers/${serverId}/readiness`))
  return r.marketplaces.find((m) => m.marketplace === 'marketplace_a')!
}

/** Puts the machine as given (GOOD plus `patch`) and lets the sync read it. */
async function machine(patch: MachineFields = {}): Promise<Entry> {
  sim.putMachine(4242, MACHINE, { ...GOOD, ...patch })
  await job('marketplaces.sync')
  return readiness()
}

const statuses = (e: Entry) => Object.fromEntries(e.items.map((i) => [i.id, i.status]))

beforeAll(async () => {
  sim = await startMarketplaceA({ rateScale: 0, owners: [{ id: 4242, email: 'host@example.com', keys: [{ key: KEY, label: 'readiness' }] }] })
  sim.putMachine(4242, MACHINE, GOOD)
  app = await startTestApp({ MARKETPLACE_A_API_URL: sim.url })
  owner = await newOwner(app, 'ready', 'pro')
  stranger = await newOwner(app, 'ready-stranger', 'pro')
  const e = await enrolAgent(app, owner, HOST as Partial<Facts>)
  serverId = e.server_id
  agentToken = e.agent_token
  await ok(await httpsHello(app, agentToken, HOST as Partial<Facts>), 204)
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY } }))
  await ok(
    await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: serverId, marketplace: 'marketplace_a', external_machine_id: String(MACHINE) } }),
    201,
  )
})
afterAll(async () => {
  await app.close()
  await sim.stop()
})

describe('a machine meeting every threshold', () => {
  test('is ready on marketplace_a: every required item passes, with its value, threshold and their sources', async () => {
    const e = await machine()
    expect(e).toMatchObject({ linked: true, status: 'ready' })
    for (const i of e.items.filter((x) => x.required)) expect({ id: i.id, status: i.status }).toEqual({ id: i.id, status: 'pass' })
    const byId = new Map(e.items.map((i) => [i.id, i]))
    expect(byId.get('cuda.version')).toMatchObject({
      value: '12.4',
      value_source: 'marketplace',
      threshold: '≥ 11.8 (Vast’s verification asks 12.0)',
      action: null,
    })
    expect(byId.get('network.download')).toMatchObject({
      value: '900',
      value_source: 'marketplace',
      threshold: '≥ 250 (500 × 96 GiB VRAM ÷ 192, kept within 100..500)',
    })
    expect(byId.get('network.direct_ports')).toMatchObject({ value: '200', threshold: '≥ 3 × GPUs = 12' })
    expect(byId.get('system.ram')).toMatchObject({ value: '257000', threshold: '≥ 93388.8 (0.95 × 98304 MiB VRAM, at most 2000000)' })
    expect(byId.get('disk.space')).toMatchObject({ status: 'pass', value: '700', value_source: 'agent' })
    expect(byId.get('driver.unchanged')).toMatchObject({ status: 'pass', value: 'driver 550.54.15, CUDA 12.4' })
    // Password SSH: nobody reports sshd's setting; it is said so, not guessed.
    expect(byId.get('ssh.password')).toMatchObject({ status: 'unknown', required: false, value: null })
    // Not linked on marketplace_b: a what-if from the agent's facts, unknown where only the platform measures.
    const r = await ok<Readiness>(await api(app, owner, 'GET', `/servers/${serverId}/readiness`))
    expect(r.status).toBe('ready')
    const b = r.marketplaces.find((m) => m.marketplace === 'marketplace_b')!
    expect(b).toMatchObject({ linked: false, status: 'unknown' })
    expect(b.items.find((i) => i.id === 'cuda.version')).toMatchObject({ status: 'pass', value: '12.4', value_source: 'agent' })
    expect(b.items.find((i) => i.id === 'reliability')).toMatchObject({ status: 'unknown' })
  })

  test('GET /readiness counts it ready; ETag and If-None-Match answer 304', async () => {
    const res = await api(app, owner, 'GET', '/readiness')
    const tag = res.headers.get('etag')!
    const body = await ok<{ counts: Record<string, number>; servers: { server_id: string; status: string; marketplaces: { failing: string[] }[] }[] }>(res)
    expect(body.counts).toEqual({ ready: 1, not_ready: 0, unknown: 0 })
    expect(body.servers).toHaveLength(1)
    expect(body.servers[0]).toMatchObject({ server_id: serverId, status: 'ready' })
    expect(tag).toMatch(/^"r-[0-9a-f]{32}"$/)
    expect((await api(app, owner, 'GET', '/readiness', { headers: { 'if-none-match': tag } })).status).toBe(304)
  })

  test("another tenant's server is a plain 404, and its fleet summary is empty", async () => {
    const res = await api(app, stranger, 'GET', `/servers/${serverId}/readiness`)
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toContain('application/problem+json')
    expect((await ok<{ servers: unknown[] }>(await api(app, stranger, 'GET', '/readiness'))).servers).toEqual([])
  })
})

/** [what, machine patch, the item that flips, its status]: at, just above and just below each threshold. */
const CASES: [string, MachineFields, string, 'pass' | 'fail'][] = [
  ['CUDA at 11.8', { cuda_max_good: 11.8 }, 'cuda.version', 'pass'],
  ['CUDA just above, 11.9', { cuda_max_good: 11.9 }, 'cuda.version', 'pass'],
  ['CUDA just below, 11.7', { cuda_max_good: 11.7 }, 'cuda.version', 'fail'],
  ['reliability at 0.90 (strictly above is needed)', { reliability2: 0.9 }, 'reliability', 'fail'],
  ['reliability just above, 0.9001', { reliability2: 0.9001 }, 'reliability', 'pass'],
  ['reliability just below, 0.8999', { reliability2: 0.8999 }, 'reliability', 'fail'],
  ['direct ports at 3 × 4', { direct_port_count: 12 }, 'network.direct_ports', 'pass'],
  ['direct ports just above, 13', { direct_port_count: 13 }, 'network.direct_ports', 'pass'],
  ['direct ports just below, 11', { direct_port_count: 11 }, 'network.direct_ports', 'fail'],
  ['PCIe at 2.85 GB/s (strictly above is needed)', { pcie_bw: 2.85 }, 'pcie.bandwidth', 'fail'],
  ['PCIe just above, 2.86', { pcie_bw: 2.86 }, 'pcie.bandwidth', 'pass'],
  ['PCIe just below, 2.84', { pcie_bw: 2.84 }, 'pcie.bandwidth', 'fail'],
  ['download at the 96 GiB floor, 250', { inet_down: 250 }, 'network.download', 'pass'],
  ['download just above, 250.1', { inet_down: 250.1 }, 'network.download', 'pass'],
  ['download just below, 249.9', { inet_down: 249.9 }, 'network.download', 'fail'],
  ['upload at the 96 GiB floor, 250', { inet_up: 250 }, 'network.upload', 'pass'],
  ['upload just above, 250.1', { inet_up: 250.1 }, 'network.upload', 'pass'],
  ['upload just below, 249.9', { inet_up: 249.9 }, 'network.upload', 'fail'],
  ['download at the 192 GiB floor (capped at 500)', { gpu_total_ram: 196608, inet_down: 500 }, 'network.download', 'pass'],
  ['download just below the 192 GiB floor', { gpu_total_ram: 196608, inet_down: 499.9 }, 'network.download', 'fail'],
  ['upload just above the 192 GiB floor', { gpu_total_ram: 196608, inet_up: 500.1 }, 'network.upload', 'pass'],
  ['download at the 36 GiB floor (raised to 100)', { gpu_total_ram: 36864, inet_down: 100 }, 'network.download', 'pass'],
  ['download just below the 36 GiB floor', { gpu_total_ram: 36864, inet_down: 99.9 }, 'network.download', 'fail'],
  ['upload just above the 36 GiB floor', { gpu_total_ram: 36864, inet_up: 100.1 }, 'network.upload', 'pass'],
  ['VRAM at 7 GiB per GPU (strictly above is needed)', { gpu_total_ram: 4 * 7168 }, 'gpu.ram', 'fail'],
  ['VRAM just above, 7169 MiB per GPU', { gpu_total_ram: 4 * 7169 }, 'gpu.ram', 'pass'],
  ['VRAM just below, 7167 MiB per GPU', { gpu_total_ram: 4 * 7167 }, 'gpu.ram', 'fail'],
  ['system memory just above 0.95 × VRAM (93389)', { cpu_ram: 93389 }, 'system.ram', 'pass'],
  ['system memory just below 0.95 × VRAM (93388)', { cpu_ram: 93388 }, 'system.ram', 'fail'],
  ['system memory at 0.95 × VRAM (120000 MiB VRAM: 114000)', { gpu_total_ram: 120000, cpu_ram: 114000 }, 'system.ram', 'pass'],
  ['system memory just below it (113999)', { gpu_total_ram: 120000, cpu_ram: 113999 }, 'system.ram', 'fail'],
  ['CPU cores at 2 × 4', { cpu_cores: 8 }, 'cpu.cores', 'pass'],
  ['CPU cores just above, 9', { cpu_cores: 9 }, 'cpu.cores', 'pass'],
  ['CPU cores just below, 7', { cpu_cores: 7 }, 'cpu.cores', 'fail'],
  ['deverified', { verification: 'deverified' }, 'verification', 'fail'],
  ['unverified', { verification: 'unverified' }, 'verification', 'fail'],
  ['a host daemon error', { error_description: 'daemon: nvml init failed' }, 'platform.error', 'fail'],
]

describe('each threshold flips exactly its own item', () => {
  let good: Record<string, string>
  beforeAll(async () => {
    good = statuses(await machine())
  })

  test.each(CASES)('%s', async (_what, patch, itemId, status) => {
    const e = await machine(patch)
    const now = statuses(e)
    expect(now[itemId]).toBe(status)
    // Every other item reads as it did on the good machine.
    expect({ ...now, [itemId]: good[itemId] }).toEqual(good)
    expect(e.status).toBe(status === 'pass' ? 'ready' : 'not_ready')
    const item = e.items.find((i) => i.id === itemId)!
    expect(item.action === null).toBe(status === 'pass')
    expect(item.value).not.toMatch(/e[+-]?\d/)
  })
})

describe('a regression', () => {
  type Incident = {
    id: string
    kind: string
    cause_key: string
    state: string
    occurrences: number
    marketplace: string | null
    notifications: { category: string }[]
  }
  const readinessIncidents = async () => (await ok<{ items: Incident[] }>(await api(app, owner, 'GET', '/alerts?kind=readiness'))).items

  test('a driver change between two facts reports opens one incident and one notification in `error`, once', async () => {
    await machine()
    await job('readiness.evaluate')
    expect(await readinessIncidents()).toEqual([])
    // The owner updates the driver: the agent's next hello says so.
    await ok(await httpsHello(app, agentToken, { ...HOST, driver_version: '560.35.03', cuda_version: '12.6' } as Partial<Facts>), 204)
    const e = await readiness()
    expect(e.items.find((i) => i.id === 'driver.unchanged')).toMatchObject({ status: 'fail', value: 'driver 560.35.03, CUDA 12.6' })
    expect(e.items.filter((i) => i.status === 'fail').map((i) => i.id)).toEqual(['driver.unchanged'])
    const run = await job('readiness.evaluate')
    expect(run.detail).toContain('1 regressions')
    await job('readiness.evaluate')
    const incidents = await readinessIncidents()
    expect(incidents).toHaveLength(1)
    expect(incidents[0]).toMatchObject({
      cause_key: `readiness:${serverId}:marketplace_a:driver.unchanged`,
      state: 'open',
      occurrences: 1,
      marketplace: 'marketplace_a',
    })
    expect(incidents[0]!.notifications.map((n) => n.category)).toEqual(['error'])
    const events = (await ok<{ items: { kind: string }[] }>(await api(app, owner, 'GET', `/servers/${serverId}/events?kind=readiness.regressed`))).items
    expect(events).toHaveLength(1)
  })

  test('linking a machine whose own view fails an item the agent’s what-if passed is no regression', async () => {
    const other = await enrolAgent(app, owner, HOST as Partial<Facts>)
    await ok(await httpsHello(app, other.agent_token, HOST as Partial<Facts>), 204)
    // Not linked: the agent's 200-port range passes network.direct_ports on marketplace_a's what-if.
    await job('readiness.evaluate')
    sim.putMachine(4242, 602, { ...GOOD, hostname: 'rig-ready-2', direct_port_count: 5 })
    await ok(
      await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: other.server_id, marketplace: 'marketplace_a', external_machine_id: '602' } }),
      201,
    )
    await job('marketplaces.sync')
    const run = await job('readiness.evaluate')
    expect(run.detail).toContain('0 regressions')
    expect((await readinessIncidents()).filter((i) => i.cause_key.includes(other.server_id))).toEqual([])
    const r = await ok<Readiness>(await api(app, owner, 'GET', `/servers/${other.server_id}/readiness`))
    expect(r.marketplaces.find((m) => m.marketplace === 'marketplace_a')!.items.find((i) => i.id === 'network.direct_ports')).toMatchObject({
      status: 'fail',
      value: '5',
      value_source: 'marketplace',
    })
  })

  test('the platform verifying the machine again on the new driver resolves it', async () => {
    await machine({ verification: 'deverified' })
    await job('readiness.evaluate')
    await machine()
    await job('readiness.evaluate')
    const driver = (await readinessIncidents()).find((i) => i.cause_key.endsWith(':driver.unchanged'))!
    expect(driver.state).toBe('resolved')
    expect((await readiness()).items.find((i) => i.id === 'driver.unchanged')).toMatchObject({ status: 'pass', value: 'driver 560.35.03, CUDA 12.6' })
  })
})
