import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { call, newTenant, setPlan, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'

/** Issue 16, connections on marketplace_b (the Clore simulator over real HTTP). */

const KEY = 'clore-good-key-0123456789abcdef'
const NO_OFFERS = { rented_amount: 0, rented_on_marketplace_amount: 0, rented_finished_amount: 0, leased_amount: 0, leased_finished_amount: 0 }

let sim: MarketplaceBSim
let app: TestApp
let owner: Member
beforeAll(async () => {
  sim = await startMarketplaceB({
    requestIntervalMs: 0,
    currencyRatesInUsd: { 'USD-Blockchain': 1, 'CLORE-Blockchain': 0.0025 },
    owners: {
      [KEY]: {
        label: 'host',
        userId: 77,
        servers: [{ name: 'rig-b1', id: 41, online: true, visibility: 'public', pricing: { 'CLORE-Blockchain': 2000 } }],
        poh: { balance: { total: 400000, free_amount: 0, reward_amount: 0, offers: NO_OFFERS } },
      },
    },
  })
  app = await startTestApp({ MARKETPLACE_B_API_URL: sim.url })
  owner = await newTenant(app, 'market-b')
  await setPlan(app, owner.tenantId, 'pro')
})
afterAll(async () => {
  await app.close()
  await sim.stop()
})

const connect = (key: string) => call(app, 'PUT', '/marketplaces/marketplace_b', owner, { json: { api_key: key } })

describe('connecting a marketplace_b account', () => {
  test('an accepted key connects, naming the owner and the holding-programme amount in USD', async () => {
    const res = await connect(KEY)
    const text = await res.text()
    expect(res.status).toBe(200)
    expect(text).not.toContain(KEY)
    expect(JSON.parse(text)).toMatchObject({ marketplace: 'marketplace_b', status: 'connected', owner: 'user 77', holding_usd: '1000.00' })
  })

  test('a key Clore answers with code 3 is rejected_by_marketplace and not stored', async () => {
    const res = await connect('clore-wrong-key-0000000000000')
    expect(res.status).toBe(422)
    expect(((await res.json()) as { errors: { path: string; code: string }[] }).errors[0]).toEqual({ path: '/api_key', code: 'rejected_by_marketplace' })
    const list = (await (await call(app, 'GET', '/marketplaces/accounts', owner)).json()) as { items: { marketplace: string }[] }
    expect(list.items.map((i) => i.marketplace)).toEqual(['marketplace_b'])
  })

  test('Clore down answers 503 and the stored connection stays as it was', async () => {
    const before = await (await call(app, 'GET', '/marketplaces/accounts', owner)).text()
    await sim.setMode('5xx')
    try {
      const res = await connect(KEY)
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
    } finally {
      await sim.setMode('ok')
    }
    expect(await (await call(app, 'GET', '/marketplaces/accounts', owner)).text()).toBe(before)
  })

  test('the key is in no log line, database file or WAL', () => {
    const stored = readdirSync(app.dir)
      .filter((f) => f.startsWith('gpuhq.db'))
      .map((f) => readFileSync(join(app.dir, f)).toString('latin1'))
      .join('\n')
    expect(app.rawLogs.join('\n')).not.toContain(KEY)
    expect(stored).not.toContain(KEY)
  })
})
