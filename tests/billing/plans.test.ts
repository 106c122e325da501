import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { addServers, getJson, payer } from '../support/billing'
import { expectProblem } from '../support/problem'

let app: TestApp
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
})
afterAll(() => app.close())

type Plan = {
  code: string
  label: string
  monthly_price_per_server_usd: string | null
  contract_priced: boolean
  capabilities: Record<string, boolean | number | null>
}
const BASE = ['fleet', 'telemetry', 'commands', 'marketplaces', 'earnings', 'cost_basis', 'notifications']

describe('GET /plans: the public catalogue', () => {
  test('anyone, without credentials, reads the four seeded plans in order with their prices and server limits', async () => {
    const { items } = await getJson<{ items: Plan[] }>(app, null, '/plans')
    expect(items.map((p) => p.code)).toEqual(['free', 'starter', 'pro', 'enterprise'])
    const by = Object.fromEntries(items.map((p) => [p.code, p]))
    expect(by.free).toMatchObject({ label: 'Free', monthly_price_per_server_usd: '0.00', contract_priced: false })
    expect(by.starter).toMatchObject({ label: 'Starter', monthly_price_per_server_usd: '2.00', contract_priced: false })
    expect(by.pro).toMatchObject({ label: 'Pro', monthly_price_per_server_usd: '4.00', contract_priced: false })
    expect(by.enterprise).toMatchObject({ label: 'Enterprise', monthly_price_per_server_usd: null, contract_priced: true })
    expect(by.free!.capabilities['fleet.servers.max']).toBe(1)
    expect(by.starter!.capabilities['fleet.servers.max']).toBe(10)
    expect(by.pro!.capabilities['fleet.servers.max']).toBeNull()
    expect(by.enterprise!.capabilities['fleet.servers.max']).toBeNull()
  })

  test('the capability matrix: every plan has the base features; strategy and AI access only on pro and enterprise', async () => {
    const { items } = await getJson<{ items: Plan[] }>(app, null, '/plans')
    for (const p of items) {
      for (const c of BASE) expect({ plan: p.code, c, on: p.capabilities[c] }).toEqual({ plan: p.code, c, on: true })
      const paidUp = p.code === 'pro' || p.code === 'enterprise'
      expect({ plan: p.code, strategy: p.capabilities.strategy, ai: p.capabilities.ai_access }).toEqual({ plan: p.code, strategy: paidUp, ai: paidUp })
    }
  })

  test('prices are money decimal strings, never JSON numbers', async () => {
    const raw = await (await app.fetch('/api/v1/plans')).text()
    expect(raw).not.toMatch(/"monthly_price_per_server_usd":\s*[0-9]/)
    expect(raw).toContain('"monthly_price_per_server_usd":"2.00"')
  })
})

describe("GET /plans/current: what the tenant's plan allows now", () => {
  test('a tenant on starter with three servers sees its plan, seven servers left and its account state', async () => {
    const owner = await payer(app, 'starter')
    await addServers(app, owner.tenantId, 3)
    const cur = await getJson(app, owner, '/plans/current')
    expect(cur.plan.code).toBe('starter')
    expect(cur.plan.capabilities['fleet.servers.max']).toBe(10)
    expect(cur.usage).toEqual({ managed_servers: 3, servers_left: 7 })
    expect(cur.account_state).toBe('active')
  })

  test("a decommissioned server no longer uses the plan's allowance", async () => {
    const owner = await payer(app, 'free')
    const [id] = await addServers(app, owner.tenantId, 1)
    expect((await getJson(app, owner, '/plans/current')).usage).toEqual({ managed_servers: 1, servers_left: 0 })
    expect((await call(app, 'POST', `/servers/${id}/decommission`, owner)).status).toBe(200)
    expect((await getJson(app, owner, '/plans/current')).usage).toEqual({ managed_servers: 0, servers_left: 1 })
  })

  test('on pro the allowance is unlimited (null) and strategy and AI access are on', async () => {
    const owner = await payer(app, 'pro')
    await addServers(app, owner.tenantId, 12)
    const cur = await getJson(app, owner, '/plans/current')
    expect(cur.usage).toEqual({ managed_servers: 12, servers_left: null })
    expect(cur.plan.capabilities).toMatchObject({ strategy: true, ai_access: true, 'fleet.servers.max': null })
  })

  test('a tenant without a plan assignment sees plan null and no servers left', async () => {
    const owner = await payer(app, null)
    const cur = await getJson(app, owner, '/plans/current')
    expect(cur.plan).toBeNull()
    expect(cur.usage.servers_left).toBe(0)
  })

  test('it needs a session: without one it answers 401', async () => {
    await expectProblem(await call(app, 'GET', '/plans/current', null), 401, 'unauthorized')
  })
})
