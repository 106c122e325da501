import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { call, insertServer, newTenant, setPlan, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'

/**
 * Issue 34, "Jobs isolate tenants", earnings.sample on Vast (the simulator over real HTTP): a link's
 * deals are priced where its own sample reads them. Two tenants each have a Vast machine with two
 * cards rented on demand; the first tenant's link projection is then damaged as a database from
 * before the bounds might hold it (999,999,999 USD per GPU-hour: two cards' day is past the money
 * range, so its deals cannot be priced). Before, pricing every link's deals up front failed the
 * whole run; now only that link fails, the other is sampled, and the run is partial.
 */
const OWNERS = [
  { id: 8101, key: 'vast-isolation-a-0123456789abcdef', machine: 8111 },
  { id: 8102, key: 'vast-isolation-b-0123456789abcdef', machine: 8112 },
]
let sim: MarketplaceASim
let app: TestApp
let members: { member: Member; server: string }[] = []

type Run = { outcome: string; detail: string | null }
async function runJob(name: string): Promise<Run> {
  const res = await app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' })
  const text = await res.text()
  expect({ status: res.status, text }).toMatchObject({ status: 200 })
  return JSON.parse(text) as Run
}
async function accruedSeconds(m: { member: Member; server: string }): Promise<number> {
  const res = await call(app, 'GET', '/marketplaces/earnings', m.member)
  expect(res.status).toBe(200)
  const items = ((await res.json()) as { items: { server_id: string; accrued_seconds: number }[] }).items
  return items.filter((r) => r.server_id === m.server).reduce((s, r) => s + r.accrued_seconds, 0)
}

beforeAll(async () => {
  sim = await startMarketplaceA({
    rateScale: 0,
    owners: OWNERS.map((o) => ({ id: o.id, email: `host-${o.id}@example.com`, keys: [{ key: o.key, label: 'iso' }] })),
  })
  app = await startTestApp({ LOG_LEVEL: 'silent', MARKETPLACE_A_API_URL: sim.url })
  for (const o of OWNERS) {
    sim.putMachine(o.id, o.machine, { hostname: `rig-${o.machine}`, listed: true, num_gpus: 2, gpu_name: 'RTX 4090', listed_gpu_cost: 0.5 })
    sim.addRental(o.machine, { kind: 'on_demand', gpus: 2, running: true })
    const member = await newTenant(app, `vast-${o.id}`)
    await setPlan(app, member.tenantId, 'pro')
    const server = await insertServer(app, member.tenantId, `rig-${o.machine}`)
    expect((await call(app, 'PUT', '/marketplaces/marketplace_a', member, { json: { api_key: o.key } })).status).toBe(200)
    const link = await call(app, 'POST', '/marketplaces/links', member, {
      json: { server_id: server, marketplace: 'marketplace_a', external_machine_id: String(o.machine) },
    })
    expect(link.status).toBe(201)
    members.push({ member, server })
  }
  members = members.sort((a, b) => (a.member.tenantId < b.member.tenantId ? -1 : 1))
})
afterAll(async () => {
  await app?.close()
  await sim?.stop()
})

test("a link whose deals cannot be priced fails alone: the other tenant's link is sampled and the run is partial", async () => {
  const [damaged, sound] = members as [(typeof members)[0], (typeof members)[0]]
  expect((await runJob('marketplaces.sync')).outcome).toBe('succeeded')
  expect((await runJob('earnings.sample')).outcome).toBe('succeeded')

  const row = (await app.deps.db.get(sql`SELECT remote FROM marketplace_links WHERE server_id = ${damaged.server}`)) as { remote: string }
  const projection = JSON.parse(row.remote) as { price_gpu_hour: string | null; gpu_count: number | null; gpu_occupancy: string | null }
  expect(projection).toMatchObject({ gpu_count: 2 })
  projection.price_gpu_hour = '999999999'
  await app.deps.db.run(sql`UPDATE marketplace_links SET remote = ${JSON.stringify(projection)} WHERE server_id = ${damaged.server}`)

  const before = await accruedSeconds(sound)
  expect((await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: 300 } })).status).toBe(200)
  const run = await runJob('earnings.sample')
  expect(run.outcome).toBe('partial')
  expect(run.detail).toContain(`1 tenants failed: ${damaged.member.tenantId} (link ${damaged.server} marketplace_a: `)
  expect(run.detail).toContain('1 links sampled')
  expect(await accruedSeconds(sound)).toBeGreaterThanOrEqual(before + 300)
})
