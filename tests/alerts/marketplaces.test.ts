import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { insertServer } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { api, newOwner, ok, type Owner } from '../support/fleet'
import { alert, alerts, asMember, evaluate, NOTHING_CHANGED, runJob } from './support'

/**
 * Issue 21, the marketplace causes, against the marketplace_a simulator over real HTTP:
 * `marketplace_error` for a connected account whose calls fail (warning) or whose stored key the
 * platform rejects (critical), resolved once the account works again or is disconnected; and
 * `stale_link` for a link the sync marked stale, counted again at each sync that still misses the
 * machine and resolved when it is listed again. The sync records what happened; alerts.evaluate
 * turns it into incidents.
 */

const KEY = 'vast-alerts-key-0123456789abcdef'
const SPARE_KEY = 'vast-alerts-spare-key-9876543210'
const VAST_OWNER = 5151

let sim: MarketplaceASim
let app: TestApp
let owner: Owner
let rig: string

const sync = () => runJob(app, 'marketplaces.sync')
const ofKind = (kind: string) => alerts(app, asMember(owner), { kind })

beforeAll(async () => {
  sim = await startMarketplaceA({
    rateScale: 0,
    owners: [
      {
        id: VAST_OWNER,
        email: 'host@example.com',
        keys: [
          { key: KEY, label: 'alerts' },
          { key: SPARE_KEY, label: 'spare' },
        ],
      },
    ],
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: sim.url })
  owner = await newOwner(app, 'alerts-market', 'pro')
  rig = await insertServer(app, owner.tenantId, 'rig-m')
  sim.putMachine(VAST_OWNER, 701, { hostname: 'rig-701' })
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY } }))
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: rig, marketplace: 'marketplace_a', external_machine_id: '701' } }), 201)
})
afterAll(async () => {
  await app.close()
  await sim.stop()
})

describe('a marketplace account in trouble', () => {
  test('calls that fail open one warning incident for the account; another failed sync is a repeat; a working sync resolves it', async () => {
    await sync()
    expect(await evaluate(app)).toBe(NOTHING_CHANGED)
    await sim.setMode('5xx')
    try {
      await sync()
      await evaluate(app)
      const [i] = await ofKind('marketplace_error')
      expect(i).toMatchObject({
        cause_key: 'marketplace_error:marketplace_a',
        severity: 'warning',
        state: 'open',
        server_id: null,
        marketplace: 'marketplace_a',
        title: 'marketplace_a calls are failing',
        occurrences: 1,
        notifications: [],
      })
      expect(i!.detail).toContain('could not be reached')
      expect(await evaluate(app)).toBe(NOTHING_CHANGED)
      await sync()
      await evaluate(app)
      expect((await ofKind('marketplace_error')).map((x) => [x.id, x.occurrences])).toEqual([[i!.id, 2]])
    } finally {
      await sim.setMode('ok')
    }
    await sync()
    await evaluate(app)
    const [done] = await ofKind('marketplace_error')
    expect(done).toMatchObject({ state: 'resolved', resolved_by: null, resolution: 'the account is connected and its calls succeed again', occurrences: 2 })
  })

  test('a stored key the platform rejects opens a critical incident, which lasts until a working key is connected', async () => {
    sim.revokeKey(KEY)
    await sync()
    await evaluate(app)
    const open = (await ofKind('marketplace_error')).filter((i) => i.state !== 'resolved')
    expect(open).toHaveLength(1)
    expect(open[0]).toMatchObject({ severity: 'critical', title: 'marketplace_a rejected the stored API key', occurrences: 1 })
    expect(open[0]!.detail).toContain('PUT /api/v1/marketplaces/marketplace_a')
    // The key is not sent again, so later syncs observe nothing new.
    await sync()
    expect(await evaluate(app)).toBe(NOTHING_CHANGED)
    await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: SPARE_KEY } }))
    await evaluate(app)
    expect(await alert(app, asMember(owner), open[0]!.id)).toMatchObject({
      state: 'resolved',
      resolution: 'the account is connected and its calls succeed again',
    })
  })
})

describe('a stale link', () => {
  test("a machine gone from the platform's listing opens one incident for the link, counted again at each sync, resolved once it is listed again", async () => {
    sim.removeMachine(701)
    await sync()
    await evaluate(app)
    const [i] = await ofKind('stale_link')
    expect(i).toMatchObject({
      cause_key: `stale_link:${rig}:marketplace_a`,
      severity: 'warning',
      state: 'open',
      server_id: rig,
      marketplace: 'marketplace_a',
      title: 'Link stale: rig-m on marketplace_a',
      occurrences: 1,
    })
    expect(i!.detail).toContain('Machine 701 no longer appears')
    expect(await evaluate(app)).toBe(NOTHING_CHANGED)
    await sync()
    await evaluate(app)
    expect((await ofKind('stale_link')).map((x) => [x.id, x.occurrences])).toEqual([[i!.id, 2]])

    sim.putMachine(VAST_OWNER, 701, { hostname: 'rig-701' })
    await sync()
    await evaluate(app)
    expect(await alert(app, asMember(owner), i!.id)).toMatchObject({
      state: 'resolved',
      resolution: 'the link is no longer stale: the machine is listed again, or the link was removed',
    })
    expect(await evaluate(app)).toBe(NOTHING_CHANGED)
  })
})

describe('disconnecting the marketplace', () => {
  test("resolves the account's incident", async () => {
    await sim.setMode('5xx')
    try {
      await sync()
    } finally {
      await sim.setMode('ok')
    }
    await evaluate(app)
    const failing = (await ofKind('marketplace_error')).filter((i) => i.state === 'open')
    expect(failing).toHaveLength(1)
    await ok(await api(app, owner, 'DELETE', '/marketplaces/marketplace_a'), 204)
    await evaluate(app)
    expect(await alert(app, asMember(owner), failing[0]!.id)).toMatchObject({ state: 'resolved', resolution: 'the account was disconnected' })
    expect(await alerts(app, asMember(owner), { state: 'unresolved' })).toEqual([])
  })
})
