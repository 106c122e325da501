import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { call, insertServer, newTenant, setPlan, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'

/**
 * Issue 34, "Jobs isolate tenants", earnings.sample: each link is sampled in its own part of the
 * job's per-tenant error boundary. Two tenants on Clore (the simulator over real HTTP), each with a
 * server rented on a spot deal; the first tenant's link projection is then damaged as a database
 * from before the bounds might hold it (a price of 10^30 USD a day, whose accrual leaves the integer
 * range). The second tenant is still sampled, the run is partial, the damaged link is not tried at
 * the next run, and once its projection is sound again its time is accrued whole (its watermark
 * never moved while it failed).
 */
const KEYS = ['clore-isolation-first-0123456789', 'clore-isolation-second-012345678']
let sim: MarketplaceBSim
let app: TestApp
let members: { member: Member; server: string }[] = []

type Run = { outcome: string; detail: string | null }
async function runJob(name: string): Promise<Run> {
  const res = await app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' })
  const text = await res.text()
  expect({ status: res.status, text }).toMatchObject({ status: 200 })
  return JSON.parse(text) as Run
}
const advance = async (seconds: number) =>
  expect((await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } })).status).toBe(200)
async function accrued(m: { member: Member; server: string }): Promise<{ seconds: number; samples: number }> {
  const res = await call(app, 'GET', '/marketplaces/earnings', m.member)
  expect(res.status).toBe(200)
  const rows = ((await res.json()) as { items: { server_id: string; accrued_seconds: number; samples: number }[] }).items.filter(
    (r) => r.server_id === m.server,
  )
  return { seconds: rows.reduce((s, r) => s + r.accrued_seconds, 0), samples: rows.reduce((s, r) => s + r.samples, 0) }
}

beforeAll(async () => {
  sim = await startMarketplaceB({
    requestIntervalMs: 0,
    currencyRatesInUsd: { bitcoin: 60000, 'CLORE-Blockchain': 0.0025, 'USD-Blockchain': 1 },
    owners: Object.fromEntries(
      KEYS.map((key, i) => [
        key,
        {
          label: `owner-${i}`,
          userId: 70 + i,
          servers: [
            {
              name: `rig-${i}`,
              id: 710 + i,
              online: true,
              visibility: 'public',
              specs: { gpu: '1x NVIDIA GeForce RTX 3090' },
              pricing: { 'USD-Blockchain': 30 },
              rentals: [{ id: 7900 + i, spot: true, currency: 'USD-Blockchain', price: 24, renter: `clore-renter-${i}` }],
            },
          ],
        },
      ]),
    ),
  })
  app = await startTestApp({ LOG_LEVEL: 'silent', MARKETPLACE_B_API_URL: sim.url })
  for (const [i, key] of KEYS.entries()) {
    const member = await newTenant(app, `earn-${i}`)
    await setPlan(app, member.tenantId, 'pro')
    const server = await insertServer(app, member.tenantId, `rig-${i}`)
    expect((await call(app, 'PUT', '/marketplaces/marketplace_b', member, { json: { api_key: key } })).status).toBe(200)
    const link = await call(app, 'POST', '/marketplaces/links', member, {
      json: { server_id: server, marketplace: 'marketplace_b', external_machine_id: String(710 + i) },
    })
    expect(link.status).toBe(201)
    members.push({ member, server })
  }
  // Tenants (and their links) are walked in id order: the damaged one comes first.
  members = members.sort((a, b) => (a.member.tenantId < b.member.tenantId ? -1 : 1))
})
afterAll(async () => {
  await app?.close()
  await sim?.stop()
})

test('a link whose sample fails does not stop the others; the run is partial, the link waits out a backoff, and its time is accrued whole once it can be', async () => {
  const [damaged, sound] = members as [(typeof members)[0], (typeof members)[0]]
  expect((await runJob('marketplaces.sync')).outcome).toBe('succeeded')
  expect((await runJob('earnings.sample')).outcome).toBe('succeeded')

  const remote = (await app.deps.db.get(sql`SELECT remote FROM marketplace_links WHERE server_id = ${damaged.server}`)) as { remote: string }
  const projection = JSON.parse(remote.remote) as { rentals: { price_day: string | null }[] }
  expect(projection.rentals).toHaveLength(1)
  projection.rentals[0]!.price_day = '1e30'
  await app.deps.db.run(sql`UPDATE marketplace_links SET remote = ${JSON.stringify(projection)} WHERE server_id = ${damaged.server}`)

  await advance(300)
  const failed = await runJob('earnings.sample')
  expect(failed.outcome).toBe('partial')
  expect(failed.detail).toContain(`1 tenants failed: ${damaged.member.tenantId} (link ${damaged.server} marketplace_b: `)
  expect(failed.detail).toContain('1 links sampled')
  // The test clock keeps flowing with real time between requests: margins for a loaded machine.
  const first = (await accrued(sound)).seconds
  expect(first).toBeGreaterThanOrEqual(300)
  expect(first).toBeLessThan(360)
  expect((await accrued(damaged)).seconds).toBe(0)

  // The next run inside the backoff leaves the damaged link alone and samples the other.
  await advance(30)
  const next = await runJob('earnings.sample')
  expect(next).toMatchObject({ outcome: 'succeeded' })
  expect(next.detail).toContain('1 links sampled')
  expect(next.detail).toContain('1 tenants waiting out a backoff after failing')
  expect((await accrued(sound)).seconds).toBeGreaterThanOrEqual(first + 30)

  // The sync writes a sound projection again; past the backoff the link's whole time since its last sample is accrued.
  expect((await runJob('marketplaces.sync')).outcome).toBe('succeeded')
  await advance(90)
  expect(await runJob('earnings.sample')).toMatchObject({ outcome: 'succeeded' })
  // Both were first sampled, and last sampled, by the same runs: the damaged link lost no time.
  const total = (await accrued(sound)).seconds
  expect(total).toBeGreaterThanOrEqual(420)
  // Whole seconds per row: the sound link's time came in three samples, the damaged link's in one,
  // and the real-time fractions of each sample round on their own, so they may part by a second.
  expect(Math.abs((await accrued(damaged)).seconds - total)).toBeLessThanOrEqual(1)
})
