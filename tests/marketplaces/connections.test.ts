import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { ALL_SCOPES } from '../../src/platform/access'
import { addMember, call, mintPat, newTenant, setPlan, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { storedText } from '../support/postgres'

/**
 * Issue 16, connections: PUT /marketplaces/{marketplace} checks the key with the platform (here the
 * marketplace_a simulator, over real HTTP) before storing it; the three failures stay apart and
 * none stores the key; the key is never seen again, anywhere.
 */

const GOOD = 'vast-good-key-0123456789abcdef'
const OTHER = 'vast-other-key-0123456789abcdef'
const SCOPED = 'vast-scoped-key-0123456789abcdef'
const TFA = 'vast-2fa-key-0123456789abcdef'
const KEYS = [GOOD, OTHER, SCOPED, TFA]

let sim: MarketplaceASim
let app: TestApp
let owner: Member
beforeAll(async () => {
  sim = await startMarketplaceA({
    rateScale: 0,
    owners: [
      {
        id: 4242,
        email: 'host@example.com',
        keys: [
          { key: GOOD, label: 'good' },
          { key: OTHER, label: 'other' },
          { key: SCOPED, label: 'scoped', permissions: ['billing_read'] },
          { key: TFA, label: '2fa', twoFactor: true },
        ],
      },
    ],
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: sim.url })
  owner = await newTenant(app, 'market')
  await setPlan(app, owner.tenantId, 'pro')
})
afterAll(async () => {
  await app.close()
  await sim.stop()
})

const connect = (caller: Member | string, key: string, headers: Record<string, string> = {}) =>
  call(app, 'PUT', '/marketplaces/marketplace_a', caller, { json: { api_key: key }, headers })

describe('connecting a marketplace account', () => {
  test('a key the marketplace accepts is stored and the connection says whose it is, never the key', async () => {
    const res = await connect(owner, GOOD)
    const text = await res.text()
    expect(res.status).toBe(200)
    expect(text).not.toContain(GOOD)
    const c = JSON.parse(text)
    expect(c).toMatchObject({ marketplace: 'marketplace_a', status: 'connected', owner: '4242', last_failure: null, holding_usd: null })
    expect(c.key_hash).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const list = (await (await call(app, 'GET', '/marketplaces/accounts', owner)).json()) as { items: { key_hash: string }[] }
    expect(list.items).toEqual([c])
  })

  test('re-sending the same key keeps the hash; a new key changes it without disconnecting', async () => {
    const first = (await (await connect(owner, GOOD)).json()) as { key_hash: string; connected_at: string }
    const again = (await (await connect(owner, GOOD)).json()) as { key_hash: string; connected_at: string }
    expect(again.key_hash).toBe(first.key_hash)
    const other = (await (await connect(owner, OTHER)).json()) as { key_hash: string; connected_at: string; status: string }
    expect(other.key_hash).not.toBe(first.key_hash)
    expect(other.connected_at).toBe(first.connected_at)
    expect(other.status).toBe('connected')
  })

  test('a key the marketplace rejects answers 422 rejected_by_marketplace and changes nothing', async () => {
    const before = await (await call(app, 'GET', '/marketplaces/accounts', owner)).text()
    const res = await connect(owner, 'vast-unknown-key-000000000000')
    const doc = (await res.json()) as { code: string; errors: { path: string; code: string }[] }
    expect(res.status).toBe(422)
    expect(doc.code).toBe('validation_failed')
    expect(doc.errors[0]).toEqual({ path: '/api_key', code: 'rejected_by_marketplace' })
    expect(await (await call(app, 'GET', '/marketplaces/accounts', owner)).text()).toBe(before)
  })

  test('a key without the host permissions, or one that needs a two-factor session, is its own refusal', async () => {
    for (const key of [SCOPED, TFA]) {
      const res = await connect(owner, key)
      const doc = (await res.json()) as { errors: { path: string; code: string }[] }
      expect({ key, status: res.status, error: doc.errors[0] }).toEqual({ key, status: 422, error: { path: '/api_key', code: 'insufficient_permissions' } })
    }
  })

  test('an unreachable or failing marketplace answers 503 with Retry-After and stores nothing', async () => {
    const fresh = await newTenant(app, 'market-down')
    await setPlan(app, fresh.tenantId, 'pro')
    for (const mode of ['5xx', 'unreachable'] as const) {
      await sim.setMode(mode)
      try {
        const res = await connect(fresh, GOOD)
        expect({ mode, status: res.status }).toEqual({ mode, status: 503 })
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
        expect(((await res.json()) as { code: string }).code).toBe('temporarily_unavailable')
      } finally {
        await sim.setMode('ok')
      }
    }
    const list = (await (await call(app, 'GET', '/marketplaces/accounts', fresh)).json()) as { items: unknown[] }
    expect(list.items).toEqual([])
  })

  test('every call to the platform is in the operations log, without the key', async () => {
    const page = (await (await call(app, 'GET', '/marketplaces/operations', owner)).json()) as {
      items: { marketplace: string; operation: string; outcome: string; path: string; actor: { kind: string } }[]
    }
    expect(page.items.length).toBeGreaterThanOrEqual(5)
    expect(page.items.every((o) => o.marketplace === 'marketplace_a' && o.path.startsWith('/api/v0/') && o.actor.kind === 'user')).toBe(true)
    expect(new Set(page.items.map((o) => o.outcome))).toContain('rejected_key')
    expect(JSON.stringify(page)).not.toMatch(new RegExp(KEYS.join('|')))
  })

  test('only admins connect and disconnect; members read; tokens need the marketplaces scopes', async () => {
    const viewer = await addMember(app, owner.tenantId, 'viewer')
    const operator = await addMember(app, owner.tenantId, 'operator')
    expect((await connect(viewer, GOOD)).status).toBe(403)
    expect((await connect(operator, GOOD)).status).toBe(403)
    expect((await call(app, 'GET', '/marketplaces/accounts', viewer)).status).toBe(200)
    const reader = (await mintPat(app, owner, { scopes: ['marketplaces:read'] })).token
    expect((await call(app, 'GET', '/marketplaces/accounts', reader)).status).toBe(200)
    expect((await connect(reader, GOOD)).status).toBe(403)
  })

  test('another tenant sees none of it', async () => {
    const stranger = await newTenant(app, 'market-stranger')
    expect(((await (await call(app, 'GET', '/marketplaces/accounts', stranger)).json()) as { items: unknown[] }).items).toEqual([])
    expect(((await (await call(app, 'GET', '/marketplaces/operations', stranger)).json()) as { items: unknown[] }).items).toEqual([])
    expect((await call(app, 'DELETE', '/marketplaces/marketplace_a', stranger)).status).toBe(404)
  })

  test('disconnecting forgets the key; a second disconnect is 404', async () => {
    const token = (await mintPat(app, owner, { scopes: ALL_SCOPES })).token
    expect((await call(app, 'DELETE', '/marketplaces/marketplace_a', token)).status).toBe(204)
    expect(((await (await call(app, 'GET', '/marketplaces/accounts', owner)).json()) as { items: unknown[] }).items).toEqual([])
    expect((await call(app, 'DELETE', '/marketplaces/marketplace_a', token)).status).toBe(404)
    // Connected again for the last test.
    expect((await connect(owner, GOOD)).status).toBe(200)
  })

  test('no key appears in any log line, the database file or its WAL', async () => {
    const logs = app.rawLogs.join('\n')
    const stored = await storedText(app.deps.db, app.dir)
    for (const key of KEYS) {
      expect(logs).not.toContain(key)
      expect(stored).not.toContain(key)
    }
    // The simulator's own request log keeps labels, never keys.
    expect(JSON.stringify(sim.requests())).not.toMatch(new RegExp(KEYS.join('|')))
  })
})
