import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { formatTimestamp } from '../../src/platform/time'
import { insertServer, insertServers } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { GOOD_PASSWORD, sessionFrom, withSession } from '../support/accounts'
import { api, insertSecondTenant, newOwner, ok, type Owner } from '../support/fleet'

/**
 * Issue 40, listing settings over real HTTP against both simulators with the test clock: a rolling
 * end date extended once before Vast's seven-day warning and never twice for the same horizon (the
 * simulator's request log), each extension in the operations log with its reason; Vast's idle job
 * set and removed in the documented shapes, paced under the simulator's rate limits and shown on the
 * link; marketplace_b's refusal of both, with its reason; group listing profiles applied to each
 * member's link with a per-server outcome; bad input 422 with a pointer; another tenant's a 404.
 */

const KEY_A = 'vast-listing-key-0123456789abcdef'
const KEY_B = 'clore-listing-key-5f2e9a17c3'
const VAST_OWNER = 7171
const OTHER_OWNER = 7272
const US = 1_000_000
const DAY = 86_400

type Problem = { code: string; detail?: string; errors?: { path: string; code: string }[] }
type Listing = {
  end_date_days: number | null
  end_date_extended_to: string | null
  end_date_extended_at: string | null
  idle_job: { image: string; args: string; price_gpu_hour: string; price_inet_up_tb: string | null; price_inet_down_tb: string | null; set_at: string } | null
}
type Link = { server_id: string; marketplace: string; remote: Record<string, any>; listing: Listing }

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Owner
let stranger: Owner
let s1: string
let s2: string
let s3: string
let s4: string
let s5: string

beforeAll(async () => {
  // The simulator enforces Vast's per-endpoint thresholds at 5 %; the service paces at 20 % of them,
  // so a 429 in the simulator's log would mean the pacing failed.
  simA = await startMarketplaceA({
    rateScale: 0.05,
    owners: [
      { id: VAST_OWNER, email: 'host@example.com', keys: [{ key: KEY_A, label: 'listing' }] },
      { id: OTHER_OWNER, email: 'other@example.com', keys: [{ key: 'vast-other-listing-key-00000000', label: 'other' }] },
    ],
  })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    owners: {
      [KEY_B]: {
        label: 'alice',
        userId: 9,
        servers: [{ name: 'rig-b', id: 55, online: true, visibility: 'public', specs: { gpu: '2x NVIDIA GeForce RTX 3090' } }],
      },
    },
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url, MARKETPLACE_PACE_PERCENT: '20' })
  owner = await newOwner(app, 'listing', 'pro')
  stranger = await insertSecondTenant(app)
  ;[s1, s2, s3, s4, s5] = (await insertServers(app, owner.tenantId, ['rig-1', 'rig-2', 'rig-3', 'rig-4', 'rig-5'])) as [string, string, string, string, string]
  const nowS = Math.floor(app.deps.clock.nowUs() / US)
  const listed = { listed: true, num_gpus: 4, gpu_name: 'RTX 4090', listed_gpu_cost: 0.4, min_bid_price: 0.25, listed_min_gpu_count: 1 }
  simA.putMachine(VAST_OWNER, 801, { hostname: 'rig-801', ...listed, end_date: nowS + 10 * DAY })
  simA.putMachine(VAST_OWNER, 802, { hostname: 'rig-802', ...listed, end_date: nowS + 40 * DAY })
  simA.putMachine(VAST_OWNER, 803, { hostname: 'rig-803', ...listed, end_date: nowS + 40 * DAY })
  simA.putMachine(VAST_OWNER, 804, { hostname: 'rig-804', ...listed, end_date: nowS + 40 * DAY })
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY_A } }))
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_b', { json: { api_key: KEY_B } }))
  for (const [server, machine] of [
    [s1, '801'],
    [s3, '802'],
    [s4, '803'],
    [s5, '804'],
  ] as const)
    await ok(
      await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: server, marketplace: 'marketplace_a', external_machine_id: machine } }),
      201,
    )
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: s2, marketplace: 'marketplace_b', external_machine_id: '55' } }), 201)
})
afterAll(async () => {
  await app.close()
  await simA.stop()
  await simB.stop()
})

async function send(who: Owner, method: string, path: string, json?: unknown): Promise<{ status: number; body: any }> {
  const res = await api(app, who, method, path, { json })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}
const linkOf = async (server: string, marketplace = 'marketplace_a'): Promise<Link> =>
  (await send(owner, 'GET', '/marketplaces/links')).body.links.find((l: Link) => l.server_id === server && l.marketplace === marketplace)
/** Moves the service clock, then signs both owners in again (a session does not outlive weeks of test clock). */
async function advance(seconds: number): Promise<void> {
  await ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
  for (const who of [owner, stranger]) {
    const res = await app.fetch('/api/v1/auth/sessions', { method: 'POST', json: { email: who.email, password: GOOD_PASSWORD } })
    expect(res.status).toBeLessThan(300)
    who.session = sessionFrom(res)!
    who.headers = withSession(who.session)
  }
}
async function sync(): Promise<string> {
  const run = await ok<{ outcome: string; detail: string }>(app.fetch('/api/v1/_test/jobs/marketplaces.sync/run', { method: 'POST' }))
  expect(run.outcome).toBe('succeeded')
  return run.detail
}
const asks = (machine: number) => simA.requests().filter((r) => r.endpoint === 'create_asks' && (r.body as { machine?: number })?.machine === machine)
const nowS = () => Math.floor(app.deps.clock.nowUs() / US)
/** The next UTC midnight at or after `s` (unix seconds). */
const dayEnd = (s: number) => Math.ceil(s / DAY) * DAY
const expectProblem = (r: { status: number; body: Problem }, status: number, path: string, code?: string) => {
  expect(r.status).toBe(status)
  expect(r.body.errors?.[0]?.path).toBe(path)
  if (code) expect(r.body.errors?.[0]?.code).toBe(code)
}

describe('rolling end dates', () => {
  test('the horizon is stored on the link and nothing is sent until the sync finds the end date too close', async () => {
    simA.clearRequests()
    const r = await send(owner, 'PUT', `/marketplaces/links/${s1}/marketplace_a/rolling-end-date`, { days: 8 })
    expect(r.status).toBe(200)
    expect(r.body.link.listing).toEqual({ end_date_days: 8, end_date_extended_to: null, end_date_extended_at: null, idle_job: null })
    expect(asks(801)).toEqual([])
    // 10 days ahead is more than 8: the sync leaves it.
    expect(await sync()).toContain('end dates: 0 extended')
    expect(asks(801)).toEqual([])
  })

  test('once less than the horizon is left (and before the seven-day warning) the sync extends it once, with the listed prices', async () => {
    // 10 − 2.5 = 7.5 days left: under the 8-day horizon, still outside Vast's 7-day warning.
    await advance(2.5 * DAY)
    const before = (await linkOf(s1)).remote.end_date as string
    expect(Date.parse(before) / 1000 - nowS()).toBeGreaterThan(7 * DAY)
    // A renter whose contract ends before the new end date: Vast extends it too.
    simA.addRental(801, { kind: 'on_demand', gpus: 1, running: true, end_date: nowS() + 5 * DAY })
    simA.clearRequests()
    expect(await sync()).toContain('end dates: 1 extended, 0 failed')
    const target = dayEnd(nowS() + (8 + 7) * DAY)
    expect(asks(801).map((r) => r.body)).toEqual([{ machine: 801, price_gpu: 0.4, min_chunk: 1, price_min_bid: 0.25, end_date: target }])
    const link = await linkOf(s1)
    expect(link.remote.end_date).toBe(formatTimestamp(target * US))
    expect(link.listing.end_date_extended_to).toBe(formatTimestamp(target * US))
    expect(simA.billing(801)?.rentals.map((r) => r.end_date)).toEqual([target])
    expect(simA.requests().some((r) => r.status === 429)).toBe(false)
  })

  test('a platform that still shows the old end date is not sent the same horizon again', async () => {
    const extendedTo = (await linkOf(s1)).listing.end_date_extended_to!
    // As if Vast had dropped the new end date: the listing reads 7.5 days ahead again.
    simA.updateMachine(801, { end_date: nowS() + 7.5 * DAY })
    simA.clearRequests()
    expect(await sync()).toContain('end dates: 0 extended')
    expect(asks(801)).toEqual([])
    expect((await linkOf(s1)).listing.end_date_extended_to).toBe(extendedTo)
    simA.updateMachine(801, { end_date: Date.parse(extendedTo) / 1000 })
  })

  test('the same horizon is never extended twice: further syncs, a day later too, send nothing', async () => {
    simA.clearRequests()
    await sync()
    await advance(DAY)
    await sync()
    expect(asks(801)).toEqual([])
  })

  test('the operations log shows the extension under the server, by the system, with its reason; the server events too', async () => {
    const ops = (await send(owner, 'GET', `/servers/${s1}/operations?limit=50`)).body.items as {
      operation: string
      reason: string | null
      actor: { kind: string }
    }[]
    const extended = ops.filter((o) => o.reason?.startsWith('rolling end date'))
    expect(extended).toHaveLength(1)
    expect(extended[0]).toMatchObject({ operation: 'offer.publish', actor: { kind: 'system' } })
    expect(extended[0]!.reason).toContain('kept at least 8 days ahead')
    const events = (await send(owner, 'GET', `/servers/${s1}/events?kind=marketplace.end_date_extended`)).body.items
    expect(events).toHaveLength(1)
  })

  test('when the new end date comes within the horizon again, it is extended again, once', async () => {
    // The end date is 15 days (to a midnight) past the extension; 8.5 days on, fewer than 8 are left.
    await advance(7.5 * DAY)
    simA.clearRequests()
    await sync()
    await sync()
    expect(asks(801)).toHaveLength(1)
  })

  test('marketplace_b has no listing end date; bad days, another tenant and a missing link are refused', async () => {
    const b = await send(owner, 'PUT', `/marketplaces/links/${s2}/marketplace_b/rolling-end-date`, { days: 30 })
    expectProblem(b, 422, '', 'not_supported_by_marketplace')
    expect(b.body.detail).toContain('no listing end date')
    expectProblem(await send(owner, 'PUT', `/marketplaces/links/${s1}/marketplace_a/rolling-end-date`, { days: 7 }), 422, '/days')
    expectProblem(await send(owner, 'PUT', `/marketplaces/links/${s1}/marketplace_a/rolling-end-date`, { days: '30' }), 422, '/days')
    expect((await send(stranger, 'PUT', `/marketplaces/links/${s1}/marketplace_a/rolling-end-date`, { days: 30 })).status).toBe(404)
    expect((await send(owner, 'PUT', `/marketplaces/links/${s2}/marketplace_a/rolling-end-date`, { days: 30 })).status).toBe(404)
    expect((await linkOf(s1)).listing.end_date_days).toBe(8)
  })

  test('clearing it stops the extensions', async () => {
    expect((await send(owner, 'DELETE', `/marketplaces/links/${s1}/marketplace_a/rolling-end-date`)).status).toBe(204)
    expect((await linkOf(s1)).listing.end_date_days).toBeNull()
    await advance(20 * DAY)
    simA.clearRequests()
    await sync()
    expect(asks(801)).toEqual([])
  })
})

describe('idle jobs', () => {
  const job = { image: 'nvidia/cuda:12.4.1-base-ubuntu22.04', args: '--miner xmr', price_gpu_hour: '0.05', price_inet_down_tb: '2' }

  test("setting one sends Vast's create_bids in its documented shape and shows it on the link", async () => {
    simA.clearRequests()
    const r = await send(owner, 'PUT', `/marketplaces/links/${s1}/marketplace_a/idle-job`, job)
    expect(r.status).toBe(200)
    expect(
      simA
        .requests()
        .filter((q) => q.endpoint === 'create_bids')
        .map((q) => [q.method, q.path, q.body]),
    ).toEqual([
      [
        'PUT',
        '/api/v0/machines/create_bids/',
        { machine: 801, price_gpu: 0.05, price_inetd: 0.002, image: 'nvidia/cuda:12.4.1-base-ubuntu22.04', args: '--miner xmr' },
      ],
    ])
    expect(r.body.link.listing.idle_job).toMatchObject({
      image: job.image,
      args: job.args,
      price_gpu_hour: '0.05',
      price_inet_up_tb: null,
      price_inet_down_tb: '2.00',
    })
    expect((await linkOf(s1)).listing.idle_job?.image).toBe(job.image)
  })

  test('set again and removed at once, the calls stay under the rate limits (no 429 in the simulator log)', async () => {
    simA.clearRequests()
    expect((await send(owner, 'PUT', `/marketplaces/links/${s1}/marketplace_a/idle-job`, { ...job, price_gpu_hour: '0.06' })).status).toBe(200)
    expect((await send(owner, 'PUT', `/marketplaces/links/${s1}/marketplace_a/idle-job`, { ...job, price_gpu_hour: '0.07' })).status).toBe(200)
    expect((await send(owner, 'DELETE', `/marketplaces/links/${s1}/marketplace_a/idle-job`)).status).toBe(204)
    const calls = simA.requests().filter((q) => q.endpoint === 'create_bids' || q.endpoint === 'defjob')
    expect(calls.map((q) => [q.method, q.path, q.status])).toEqual([
      ['PUT', '/api/v0/machines/create_bids/', 200],
      ['PUT', '/api/v0/machines/create_bids/', 200],
      ['DELETE', '/api/v0/machines/801/defjob/', 200],
    ])
    expect((await linkOf(s1)).listing.idle_job).toBeNull()
  })

  test("marketplace_b's API sets no background job; bad input is 422 with a pointer; another tenant gets 404", async () => {
    const b = await send(owner, 'PUT', `/marketplaces/links/${s2}/marketplace_b/idle-job`, job)
    expectProblem(b, 422, '', 'not_supported_by_marketplace')
    expect(b.body.detail).toContain('background job')
    expectProblem(
      await send(owner, 'PUT', `/marketplaces/links/${s1}/marketplace_a/idle-job`, { ...job, price_gpu_hour: '0' }),
      422,
      '/price_gpu_hour',
      'too_small',
    )
    expectProblem(await send(owner, 'PUT', `/marketplaces/links/${s1}/marketplace_a/idle-job`, { ...job, price_gpu_hour: 0.05 }), 422, '/price_gpu_hour')
    expectProblem(await send(owner, 'PUT', `/marketplaces/links/${s1}/marketplace_a/idle-job`, { ...job, image: 'two words' }), 422, '/image')
    expect((await send(stranger, 'PUT', `/marketplaces/links/${s1}/marketplace_a/idle-job`, job)).status).toBe(404)
    expect((await send(stranger, 'DELETE', `/marketplaces/links/${s1}/marketplace_a/idle-job`)).status).toBe(404)
  })
})

describe('group listing profiles', () => {
  let groupId: string
  let profileId: string

  test('a profile for a group is created with its settings; bad input is 422 with a pointer', async () => {
    groupId = (await ok(await api(app, owner, 'POST', '/groups', { json: { name: 'fra-4090' } }), 201)).id
    for (const s of [s3, s4, s5, s2]) await ok(await api(app, owner, 'PATCH', `/servers/${s}`, { json: { group_id: groupId } }))
    expectProblem(
      await send(owner, 'POST', '/listing-profiles', { name: 'x', group_id: groupId, marketplace: 'marketplace_a', offer: { min_bid_hour: '0.2' } }),
      422,
      '/offer/price_gpu_hour',
    )
    expectProblem(
      await send(owner, 'POST', '/listing-profiles', { name: 'x', group_id: groupId, marketplace: 'marketplace_b', end_date_days: 30 }),
      422,
      '/end_date_days',
      'not_supported_by_marketplace',
    )
    expectProblem(
      await send(owner, 'POST', '/listing-profiles', { name: 'x', group_id: groupId, marketplace: 'marketplace_a', end_date_days: 3 }),
      422,
      '/end_date_days',
    )
    expect((await send(stranger, 'POST', '/listing-profiles', { name: 'x', group_id: groupId, marketplace: 'marketplace_a' })).status).toBe(404)
    const r = await send(owner, 'POST', '/listing-profiles', {
      name: '4090 standard',
      group_id: groupId,
      marketplace: 'marketplace_a',
      offer: { price_gpu_hour: '0.42', min_bid_hour: '0.30', min_gpu_count: 2 },
      end_date_days: 30,
      idle_job: { image: 'host/idle:1', price_gpu_hour: '0.04' },
      keep_on: true,
    })
    expect(r.status).toBe(201)
    profileId = r.body.id
    expect(r.body).toMatchObject({
      group_id: groupId,
      end_date_days: 30,
      keep_on: true,
      applied_at: null,
      idle_job: { image: 'host/idle:1', args: '', price_gpu_hour: '0.04' },
    })
    expect((await send(owner, 'POST', '/listing-profiles', { name: 'dup', group_id: groupId, marketplace: 'marketplace_a' })).status).toBe(409)
    expect((await send(stranger, 'GET', `/listing-profiles/${profileId}`)).status).toBe(404)
  })

  test("applying it sets each member's link and reports per server: done, refused with the platform's reason, skipped", async () => {
    // rig-5's machine now belongs to someone else at Vast: its create_asks is refused.
    simA.putMachine(OTHER_OWNER, 804, { hostname: 'rig-804', listed: true, listed_gpu_cost: 0.4 })
    simA.clearRequests()
    const r = await send(owner, 'POST', `/listing-profiles/${profileId}/apply`)
    expect(r.status).toBe(200)
    const by = Object.fromEntries((r.body.results as { server_id: string; reason: string | null }[]).map((x) => [x.server_id, x]))
    expect(by[s3]).toMatchObject({ outcome: 'done', steps: ['offer', 'end_date', 'idle_job', 'keep_on'], reason: null })
    expect(by[s4]).toMatchObject({ outcome: 'done' })
    expect(by[s5]).toMatchObject({ outcome: 'refused', steps: [] })
    expect(by[s5]!.reason).toContain('Only machine owner')
    expect(by[s2]).toMatchObject({ outcome: 'skipped', reason: 'no link on marketplace_a' })
    expect(r.body.profile.applied_at).not.toBeNull()
    const link = await linkOf(s3)
    expect(link.remote).toMatchObject({ price_gpu_hour: '0.42', min_bid_hour: '0.30', min_gpu_count: 2 })
    expect(link.listing).toMatchObject({ end_date_days: 30, idle_job: { image: 'host/idle:1', price_gpu_hour: '0.04' } })
    const keepOn = (await send(owner, 'GET', `/servers/${s3}`)).body.keep_on
    expect(keepOn).toContain('marketplace_a')
    expect(
      simA
        .requests()
        .filter((q) => q.endpoint === 'create_bids')
        .map((q) => (q.body as { machine: number }).machine),
    ).toEqual([802, 803])
    expect(simA.requests().some((q) => q.status === 429)).toBe(false)
    const ops = (await send(owner, 'GET', `/servers/${s3}/operations?limit=20`)).body.items as { operation: string; reason: string | null }[]
    expect(ops.find((o) => o.operation === 'offer.publish')?.reason).toBe('listing profile "4090 standard"')
  })

  test('an apply retried with the same Idempotency-Key answers the first result and sends nothing again', async () => {
    const headers = { 'idempotency-key': 'apply-profile-once' }
    const first = await api(app, owner, 'POST', `/listing-profiles/${profileId}/apply`, { headers })
    expect(first.status).toBe(200)
    const firstBody = await first.text()
    simA.clearRequests()
    const again = await api(app, owner, 'POST', `/listing-profiles/${profileId}/apply`, { headers })
    expect(again.status).toBe(200)
    expect(await again.text()).toBe(firstBody)
    expect(simA.requests().filter((q) => q.method !== 'GET')).toEqual([])
  })

  test('a server that joins the group later gets the profile from the listing-profiles.apply job, once', async () => {
    const s6 = await insertServer(app, owner.tenantId, 'rig-6')
    simA.putMachine(VAST_OWNER, 805, { hostname: 'rig-805', listed: true, num_gpus: 4, listed_gpu_cost: 0.4, end_date: nowS() + 40 * DAY })
    await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: s6, marketplace: 'marketplace_a', external_machine_id: '805' } }), 201)
    await ok(await api(app, owner, 'PATCH', `/servers/${s6}`, { json: { group_id: groupId } }))
    const before = (await send(owner, 'GET', `/listing-profiles/${profileId}`)).body.members as { server_id: string; outcome: string }[]
    expect(before.find((m) => m.server_id === s6)?.outcome).toBe('pending')
    expect(before.find((m) => m.server_id === s5)?.outcome).toBe('refused')
    simA.clearRequests()
    const run = async () => {
      const r = await ok<{ outcome: string; detail: string }>(app.fetch('/api/v1/_test/jobs/listing-profiles.apply/run', { method: 'POST' }))
      expect(r.outcome).toBe('succeeded')
      return r.detail
    }
    expect(await run()).toContain('1 new members applied')
    expect(asks(805).map((r) => r.body)).toEqual([{ machine: 805, price_gpu: 0.42, min_chunk: 2, price_min_bid: 0.3 }])
    expect(
      simA
        .requests()
        .filter((q) => q.endpoint === 'create_bids')
        .map((q) => (q.body as { machine: number }).machine),
    ).toEqual([805])
    // Only the newcomer: the members that had it (done, refused, skipped without a link) are left alone.
    expect(asks(802)).toEqual([])
    expect(asks(804)).toEqual([])
    const link = await linkOf(s6)
    expect(link.listing).toMatchObject({ end_date_days: 30, idle_job: { image: 'host/idle:1' } })
    const ops = (await send(owner, 'GET', `/servers/${s6}/operations?limit=20`)).body.items as { operation: string; actor: { kind: string } }[]
    expect(ops.find((o) => o.operation === 'offer.publish')?.actor.kind).toBe('system')
    const after = (await send(owner, 'GET', `/listing-profiles/${profileId}`)).body.members as { server_id: string; outcome: string }[]
    expect(after.find((m) => m.server_id === s6)?.outcome).toBe('done')
    simA.clearRequests()
    expect(await run()).toContain('0 new members applied')
    expect(simA.requests().filter((q) => q.method !== 'GET')).toEqual([])
  })

  test('a patch changes the profile; null clears a setting; delete leaves the links as they are', async () => {
    const r = await send(owner, 'PATCH', `/listing-profiles/${profileId}`, { idle_job: null, end_date_days: 45 })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ idle_job: null, end_date_days: 45, version: 2 })
    // A stale If-Match is 412 and changes nothing; the current one passes.
    const stale = await api(app, owner, 'PATCH', `/listing-profiles/${profileId}`, { json: { name: 'stale' }, headers: { 'if-match': '"1"' } })
    expect(stale.status).toBe(412)
    const fresh = await api(app, owner, 'PATCH', `/listing-profiles/${profileId}`, { json: { name: '4090 standard' }, headers: { 'if-match': '"2"' } })
    expect(fresh.status).toBe(200)
    expect(fresh.headers.get('etag')).toBe('"3"')
    expectProblem(await send(owner, 'PATCH', `/listing-profiles/${profileId}`, { offer: { price_gpu_hour: '-1' } }), 422, '/offer/price_gpu_hour')
    expect((await send(owner, 'GET', '/listing-profiles')).body.items).toHaveLength(1)
    expect((await send(stranger, 'GET', '/listing-profiles')).body.items).toHaveLength(0)
    expect((await send(stranger, 'DELETE', `/listing-profiles/${profileId}`)).status).toBe(404)
    expect((await send(owner, 'DELETE', `/listing-profiles/${profileId}`)).status).toBe(204)
    expect((await linkOf(s3)).listing.end_date_days).toBe(30)
  })
})
