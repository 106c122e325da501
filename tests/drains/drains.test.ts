import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { expectProblem } from '../support/problem'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { insertServer } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { commandFrame, getCommand, onlineServer, rows, runToEnd } from '../support/commands'
import { advance, api, closeAllAgents, eventually, newOwner, ok, serverEvents, type Owner, type RawAgent } from '../support/fleet'

/**
 * Issue 40, the drain, over real HTTP against both simulators with the test clock (the simulators'
 * clocks are the service's): a rented server's offers come off, the window is announced where the
 * platform can, the queued work waits for the rental's end and runs on a real agent session, the
 * kept offers go back and the window is cancelled; a cancel mid-way restores the listing; a
 * platform's refusal undoes what was done and says so; another tenant's drain is a plain 404.
 */

const KEY_A = 'vast-drain-key-0123456789abcdef'
const KEY_B = 'clore-drain-key-5f2e9a17c3'
const VAST_OWNER = 5252
const US = 1_000_000

type Drain = {
  id: string
  server_id: string
  state: string
  failure: string | null
  failed_step: string | null
  links: { marketplace: string; offer: Record<string, unknown> | null; withdrawn: boolean; window_announced: boolean; relisted: boolean; note: string | null }[]
  commands: { command_id: string; type: string; execution_status: string }[]
  version: number
}

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Owner
let stranger: Owner
let agentServer: { server_id: string; agent: RawAgent }
const nowMs = () => (app ? app.deps.clock.nowUs() / 1000 : Date.now())

beforeAll(async () => {
  simA = await startMarketplaceA({
    rateScale: 0,
    clock: nowMs,
    owners: [{ id: VAST_OWNER, email: 'drain@example.com', keys: [{ key: KEY_A, label: 'drain' }] }],
  })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    clock: nowMs,
    owners: {
      [KEY_B]: {
        label: 'drainer',
        userId: 19,
        servers: [
          { name: 'rig-b1', id: 61, online: true, visibility: 'hidden', specs: { gpu: '2x NVIDIA GeForce RTX 3090' } },
          { name: 'rig-b2', id: 62, online: true, visibility: 'hidden', specs: { gpu: '2x NVIDIA GeForce RTX 3090' } },
          { name: 'rig-b3', id: 63, online: true, visibility: 'hidden', specs: { gpu: '2x NVIDIA GeForce RTX 3090' } },
        ],
      },
    },
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url })
  owner = await newOwner(app, 'drains', 'pro')
  stranger = await newOwner(app, 'drains-stranger', 'pro')
  agentServer = await onlineServer(app, owner)
  for (const id of [801, 802, 803, 804]) simA.putMachine(VAST_OWNER, id, { hostname: `rig-${id}`, listed: false, num_gpus: 2, gpu_name: 'RTX 4090' })
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY_A } }))
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_b', { json: { api_key: KEY_B } }))
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
  await simA.stop()
  await simB.stop()
})

const VAST_OFFER = { price_gpu_hour: '0.45', min_bid_hour: '0.30' }
const CLORE_OFFER = { coin_prices: { 'USD-Blockchain': { on_demand: '6.5' } }, max_rental_hours: 48 }

async function link(server: string, marketplace: string, machine: string, offer: Record<string, unknown>): Promise<void> {
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: server, marketplace, external_machine_id: machine } }), 201)
  await ok(await api(app, owner, 'PUT', `/marketplaces/links/${server}/${marketplace}/offer`, { json: offer }))
}
const sync = () => ok(app.fetch('/api/v1/_test/jobs/marketplaces.sync/run', { method: 'POST' }))
const runAdvance = () => ok<{ outcome: string; detail: string }>(app.fetch('/api/v1/_test/jobs/drains.advance/run', { method: 'POST' }))
const drainOf = (id: string, who: Owner = owner) => api(app, who, 'GET', `/drains/${id}`)
const getDrain = (id: string) => ok<Drain>(drainOf(id))
const nowS = () => Math.floor(app.deps.clock.nowUs() / US)
const writesA = () => simA.requests().filter((r) => r.method !== 'GET' && r.endpoint !== 'bundles')
const writesB = () => simB.requests.filter((r) => r.method === 'POST')
const listedOnVast = async (machine: number) =>
  (
    (await (await fetch(`${simA.url}/api/v0/machines/`, { headers: { authorization: `Bearer ${KEY_A}` } })).json()) as {
      machines: { id: number; listed?: boolean }[]
    }
  ).machines.find((m) => m.id === machine)?.listed
const drainKinds = async (server: string) =>
  (await serverEvents(app, owner, server, { limit: '200' })).items
    .filter((e) => e.kind.startsWith('drain.'))
    .map((e) => e.kind)
    .reverse()

describe('a drain of a rented server', () => {
  test('on marketplace_a: offers off and the window announced, the work waits for the rental, runs on the agent, then the kept offer goes back', async () => {
    const server = agentServer.server_id
    await link(server, 'marketplace_a', '801', VAST_OFFER)
    simA.addRental(801, { kind: 'on_demand', gpus: 2, running: true, end_date: nowS() + 3 * 3600 })
    await sync()
    simA.clearRequests()

    const res = await api(app, owner, 'POST', `/servers/${server}/drain`, {
      json: { reason: 'driver update', window: { hours: 3, category: 'software' }, commands: [{ type: 'agent.update', params: { version: '9.9.9' } }] },
      headers: { 'idempotency-key': 'drain-801' },
    })
    expect(res.status).toBe(201)
    const started = (await res.json()) as Drain
    expect(started.state).toBe('awaiting_rental_end')
    expect(started.links).toMatchObject([{ marketplace: 'marketplace_a', offer: VAST_OFFER, withdrawn: true, window_announced: true, relisted: false }])
    expect(writesA().map((w) => [w.method, w.endpoint])).toEqual([
      ['DELETE', 'unlist'],
      ['PUT', 'dnotify'],
    ])
    expect(writesA()[1]!.body).toMatchObject({ client_id: 'me', duration: 3, maintenance_category: 'software' })
    expect(await listedOnVast(801)).toBe(false)
    // The work waits for the rental's end: nothing reached the agent.
    const [work] = started.commands
    expect(work).toMatchObject({ type: 'agent.update', execution_status: 'not_started' })
    expect((await getCommand(app, owner, work!.command_id)).queue_reason).toBe('awaiting_rental_end')
    // A second drain of the same server is refused while this one runs.
    const again = await api(app, owner, 'POST', `/servers/${server}/drain`, { json: {} })
    expect(again.status).toBe(409)

    // The job leaves it waiting while the rental runs.
    await runAdvance()
    expect((await getDrain(started.id)).state).toBe('awaiting_rental_end')

    // The rental ends under the test clock; the sync sees it, the work goes to the agent.
    const since = agentServer.agent.frames.length
    await advance(app, 4 * 3600)
    await sync()
    await commandFrame(agentServer.agent, work!.command_id, since)
    expect((await getDrain(started.id)).state).toBe('working')
    await runAdvance()
    expect((await getDrain(started.id)).state).toBe('working') // the command has not finished
    simA.clearRequests()
    // The command's end moves the drain on at once (the job would too).
    await runToEnd(agentServer.agent, work!.command_id)
    const done = await eventuallyState(started.id, 'done')
    expect(done.links[0]).toMatchObject({ withdrawn: true, relisted: true, window_announced: false })
    expect(done.commands[0]!.execution_status).toBe('succeeded')
    expect(writesA().map((w) => [w.method, w.endpoint])).toEqual([
      ['PUT', 'create_asks'],
      ['PUT', 'cancel_maint'],
    ])
    expect(writesA()[0]!.body).toMatchObject({ machine: 801, price_gpu: 0.45, price_min_bid: 0.3 })
    expect(await listedOnVast(801)).toBe(true)
    expect(await drainKinds(server)).toEqual(['drain.draining', 'drain.awaiting_rental_end', 'drain.working', 'drain.relisting', 'drain.done'])
    // The owner hears of it (category maint), once.
    const told = await rows(app, sql`SELECT category, title FROM notifications WHERE tenant_id = ${owner.tenantId} AND title LIKE 'Drain%'`)
    expect(told.map((n) => [n.category, n.title.split(':')[0]])).toEqual([['maint', 'Drain done']])
    // The link keeps the offer again (keep-on has it), and the server can be drained again.
    const links = await ok(await api(app, owner, 'GET', '/marketplaces/links'))
    expect(links.links.find((l: { server_id: string }) => l.server_id === server).remote.listed).toBe(true)
    const list = await ok<{ items: Drain[] }>(await api(app, owner, 'GET', `/drains?server_id=${server}`))
    expect(list.items.map((d) => d.id)).toEqual([started.id])
    expect((await ok<{ items: Drain[] }>(await api(app, owner, 'GET', '/drains?live=true'))).items.map((d) => d.id)).not.toContain(started.id)
  })

  test('on marketplace_b: no maintenance API (said so), the offer is withdrawn, and relisted once the order ran its length', async () => {
    const server = await insertServer(app, owner.tenantId, 'clore-rented')
    await link(server, 'marketplace_b', '61', CLORE_OFFER)
    simB.addRental(KEY_B, 'rig-b1', { id: 9061, currency: 'USD-Blockchain', price: 6.5, ct: nowS() - 3600, mrl: 5 })
    await sync()
    simB.clearRequests()
    const started = await ok<Drain>(await api(app, owner, 'POST', `/servers/${server}/drain`, { json: { reason: 'disk swap' } }), 201)
    expect(started.state).toBe('awaiting_rental_end')
    expect(started.links[0]!.window_announced).toBe(false)
    expect(started.links[0]!.note).toContain('no maintenance API')
    expect(writesB().map((w) => w.body)).toEqual([{ name: 'rig-b1', availability: false }])
    expect(simB.server(KEY_B, 'rig-b1')?.visibility).toBe('hidden')

    await advance(app, 5 * 3600)
    await sync() // the order expired: the rental ended, and with nothing queued the drain relists at once
    const done = await eventuallyState(started.id, 'done')
    expect(done.links[0]).toMatchObject({ withdrawn: true, relisted: true })
    expect(simB.server(KEY_B, 'rig-b1')?.visibility).toBe('public')
    expect(writesB().at(-1)!.body).toMatchObject({ name: 'rig-b1', availability: true, 'USD-Blockchain_on_demand': 6.5, mrl: 48 })
  })
})

/** Waits for the drain to reach `state` on its own: the reactions to a rental's end and a command's end move it, not the job. */
async function eventuallyState(id: string, state: string): Promise<Drain> {
  return eventually(async () => {
    const d = await getDrain(id)
    return d.state === state ? d : null
  })
}

describe('cancelling a drain mid-way', () => {
  test('on marketplace_b while the rental runs: the waiting work is cancelled and the listing restored', async () => {
    const server = await insertServer(app, owner.tenantId, 'clore-cancel')
    await link(server, 'marketplace_b', '62', CLORE_OFFER)
    simB.addRental(KEY_B, 'rig-b2', { id: 9062, currency: 'USD-Blockchain', price: 6.5, ct: nowS(), mrl: 100 })
    await sync()
    // Already waiting for the rental's end before the drain: waited for, never cancelled by it.
    const earlier = await ok<{ command_id: string }>(
      await api(app, owner, 'POST', '/commands', { json: { server_id: server, type: 'agent.update', params: { version: '9.9.8' }, requires: 'after_rental' } }),
      201,
    )
    const started = await ok<Drain>(
      await api(app, owner, 'POST', `/servers/${server}/drain`, { json: { commands: [{ type: 'docker.restart', params: {} }] } }),
      201,
    )
    expect(started.state).toBe('awaiting_rental_end')
    expect(simB.server(KEY_B, 'rig-b2')?.visibility).toBe('hidden')
    simB.clearRequests()
    const cancelled = await ok<Drain>(await api(app, owner, 'POST', `/drains/${started.id}/cancel`))
    expect(cancelled.state).toBe('cancelled')
    expect(cancelled.commands.map((c) => [c.command_id === earlier.command_id ? 'earlier' : c.type, c.execution_status])).toEqual([
      ['earlier', 'not_started'],
      ['docker.restart', 'cancelled'],
    ])
    expect(writesB().map((w) => w.body)).toEqual([expect.objectContaining({ name: 'rig-b2', availability: true, 'USD-Blockchain_on_demand': 6.5 })])
    expect(simB.server(KEY_B, 'rig-b2')?.visibility).toBe('public')
    expect(await drainKinds(server)).toEqual(['drain.draining', 'drain.awaiting_rental_end', 'drain.cancelled'])
    // Finished: a second cancel is a conflict, and the server may be drained again.
    expect((await api(app, owner, 'POST', `/drains/${started.id}/cancel`)).status).toBe(409)
  })

  test('on marketplace_a: the window is cancelled and the kept offer published again', async () => {
    const server = await insertServer(app, owner.tenantId, 'vast-cancel')
    await link(server, 'marketplace_a', '802', VAST_OFFER)
    simA.addRental(802, { kind: 'on_demand', gpus: 1, running: true, end_date: nowS() + 48 * 3600 })
    await sync()
    const started = await ok<Drain>(await api(app, owner, 'POST', `/servers/${server}/drain`, { json: {} }), 201)
    expect(started.state).toBe('awaiting_rental_end')
    simA.clearRequests()
    // While it drains, nothing else puts the server back on the market: a price change is a 409
    // naming the drain, a bulk publication skips it saying why; the platform hears of neither.
    const repriced = await expectProblem(
      await api(app, owner, 'PUT', `/marketplaces/links/${server}/marketplace_a/offer`, { json: { price_gpu_hour: '0.50' } }),
      409,
      'conflict',
    )
    expect(repriced.detail).toContain(`being drained for maintenance (drain ${started.id}, awaiting rental end)`)
    const bulk = await ok<{ id: string }>(
      await api(app, owner, 'POST', '/bulk-operations', {
        json: { marketplace: 'marketplace_a', action: 'publish', server_ids: [server], price_gpu_hour: '0.50' },
      }),
      202,
    )
    await ok(app.fetch('/api/v1/_test/jobs/bulk.run/run', { method: 'POST' }))
    const item = (await ok<{ items: { state: string; reason: string }[] }>(await api(app, owner, 'GET', `/bulk-operations/${bulk.id}`))).items[0]!
    expect(item.state).toBe('skipped')
    expect(item.reason).toContain('being drained for maintenance')
    expect(writesA()).toEqual([])
    const cancelled = await ok<Drain>(await api(app, owner, 'POST', `/drains/${started.id}/cancel`))
    expect(cancelled.state).toBe('cancelled')
    expect(writesA().map((w) => [w.method, w.endpoint])).toEqual([
      ['PUT', 'cancel_maint'],
      ['PUT', 'create_asks'],
    ])
    expect(await listedOnVast(802)).toBe(true)
  })
})

describe('a refusal by the platform', () => {
  test('undoes what was done on the other platform and fails saying who refused what', async () => {
    const server = await insertServer(app, owner.tenantId, 'two-platforms')
    await link(server, 'marketplace_a', '803', VAST_OFFER)
    await link(server, 'marketplace_b', '63', CLORE_OFFER)
    simB.removeServer(KEY_B, 'rig-b3') // Clore no longer knows the server: its write is refused
    simA.clearRequests()
    const res = await api(app, owner, 'POST', `/servers/${server}/drain`, { json: { commands: [{ type: 'agent.restart', params: {} }] } })
    expect(res.status).toBe(201)
    const failed = (await res.json()) as Drain
    expect(failed.state).toBe('failed')
    expect(failed.failed_step).toBe('draining')
    expect(failed.failure).toContain('marketplace_b refused to withdraw the offer')
    expect(failed.failure).toContain('the listing is restored')
    expect(failed.commands).toEqual([]) // no work was queued
    expect(failed.links.find((l) => l.marketplace === 'marketplace_a')).toMatchObject({ withdrawn: true, relisted: true, window_announced: false })
    expect(writesA().map((w) => w.endpoint)).toEqual(['unlist', 'dnotify', 'cancel_maint', 'create_asks'])
    expect(await listedOnVast(803)).toBe(true)
    expect(await drainKinds(server)).toEqual(['drain.draining', 'drain.failed'])
    // Not left live: the server may be drained again.
    expect((await ok<{ items: Drain[] }>(await api(app, owner, 'GET', `/drains?server_id=${server}&live=true`))).items).toEqual([])
  })
})

describe('a process that stopped mid-step', () => {
  test('leaves a drain in draining that the job takes up again after a minute, and not before', async () => {
    const server = await insertServer(app, owner.tenantId, 'stopped-mid-step')
    simA.putMachine(VAST_OWNER, 805, { hostname: 'rig-805', listed: false, num_gpus: 2, gpu_name: 'RTX 4090' })
    await link(server, 'marketplace_a', '805', VAST_OFFER)
    const id = app.deps.newId()
    const now = app.deps.clock.nowUs()
    const links = [
      {
        marketplace: 'marketplace_a',
        offer: VAST_OFFER,
        listed: true,
        withdrawn: false,
        window_supported: true,
        window_announced: false,
        relisted: false,
        note: null,
      },
    ]
    // As createDrain leaves it before its first step (the process stopped there).
    await rows(
      app,
      sql`INSERT INTO drains (id, tenant_id, server_id, live_server_id, group_id, state, reason, maintenance_window, links, work, command_ids, failure, failed_step, created_at, updated_at, finished_at, version)
       VALUES (${id}, ${owner.tenantId}, ${server}, ${server}, NULL, 'draining', NULL, ${JSON.stringify({ starts_at_us: now + 3600 * US, hours: 2, category: 'software' })}, ${JSON.stringify(links)}, '[]', '[]', NULL, NULL, ${now}, ${now}, NULL, 1)`,
    )
    simA.clearRequests()
    await runAdvance()
    expect((await getDrain(id)).state).toBe('draining') // a step may still be under way elsewhere
    expect(writesA()).toEqual([])
    await advance(app, 61)
    await runAdvance()
    // Idle and nothing queued: offers off, window announced, then straight back.
    expect((await getDrain(id)).state).toBe('done')
    expect(writesA().map((w) => w.endpoint)).toEqual(['unlist', 'dnotify', 'create_asks', 'cancel_maint'])
  })
})

describe('input and tenants', () => {
  test('an unknown command or bad params is 422 with pointers, and nothing is sent', async () => {
    const server = await insertServer(app, owner.tenantId, 'bad-input')
    await link(server, 'marketplace_a', '804', VAST_OFFER)
    simA.clearRequests()
    const res = await api(app, owner, 'POST', `/servers/${server}/drain`, {
      json: {
        commands: [
          { type: 'no.such', params: {} },
          { type: 'agent.update', params: { version: 'x' } },
        ],
        window: { starts_at: '2001-01-01T00:00:00Z' },
      },
    })
    expect(res.status).toBe(422)
    const problem = (await res.json()) as { code: string; errors: { path: string; code: string }[] }
    expect(problem.code).toBe('validation_failed')
    expect(problem.errors.map((e) => e.path)).toEqual(['/window/starts_at', '/commands/0/type', '/commands/1/params/version'])
    expect(writesA()).toEqual([])
    expect((await ok<{ items: Drain[] }>(await api(app, owner, 'GET', `/drains?server_id=${server}`))).items).toEqual([])
  })

  test("another tenant's drain and server are a plain 404", async () => {
    const mine = (await ok<{ items: Drain[] }>(await api(app, owner, 'GET', '/drains'))).items[0]!
    expect((await drainOf(mine.id, stranger)).status).toBe(404)
    expect((await api(app, stranger, 'POST', `/drains/${mine.id}/cancel`)).status).toBe(404)
    expect((await api(app, stranger, 'POST', `/servers/${mine.server_id}/drain`, { json: {} })).status).toBe(404)
    expect((await ok<{ items: Drain[] }>(await api(app, stranger, 'GET', '/drains'))).items).toEqual([])
  })
})

describe('the work failing', () => {
  test('a command that fails leaves the offers withdrawn (the server may be broken) and says how to relist', async () => {
    const server = agentServer.server_id
    simA.clearRequests()
    const started = await ok<Drain>(
      await api(app, owner, 'POST', `/servers/${server}/drain`, { json: { commands: [{ type: 'docker.restart', params: {} }] } }),
      201,
    )
    // Idle: no rental to wait for, the work goes at once.
    expect(started.state).toBe('working')
    const id = started.commands[0]!.command_id
    await commandFrame(agentServer.agent, id)
    await runToEnd(agentServer.agent, id, { status: 'failed', error: { code: 'runtime_down', message: 'docker did not come back', retryable: false } })
    const failed = await eventuallyState(started.id, 'failed')
    expect(failed.failed_step).toBe('working')
    expect(failed.failure).toContain('docker.restart')
    expect(failed.failure).toContain('The offers stay withdrawn')
    expect(failed.links[0]).toMatchObject({ withdrawn: true, relisted: false, window_announced: true })
    expect(await listedOnVast(801)).toBe(false)
    expect((await drainKinds(server)).slice(-3)).toEqual(['drain.awaiting_rental_end', 'drain.working', 'drain.failed'])
    // The owner relists by hand with the kept offer the drain shows.
    await ok(await api(app, owner, 'PUT', `/marketplaces/links/${server}/marketplace_a/offer`, { json: failed.links[0]!.offer }))
    expect(await listedOnVast(801)).toBe(true)
  })
})

describe('cancelling while the work runs', () => {
  test('a command on its way to the agent is cancelled and the agent told to stop; the listing goes back', async () => {
    const server = agentServer.server_id
    const started = await ok<Drain>(
      await api(app, owner, 'POST', `/servers/${server}/drain`, { json: { commands: [{ type: 'agent.restart', params: {} }] } }),
      201,
    )
    expect(started.state).toBe('working')
    const id = started.commands[0]!.command_id
    const since = agentServer.agent.frames.length
    await commandFrame(agentServer.agent, id)
    const cancelled = await ok<Drain>(await api(app, owner, 'POST', `/drains/${started.id}/cancel`))
    expect(cancelled.state).toBe('cancelled')
    expect(cancelled.commands[0]!.execution_status).toBe('cancelled')
    await agentServer.agent.waitFor((f) => f.type === 'command.cancel' && f.command_id === id, 30_000, since)
    expect(cancelled.links[0]).toMatchObject({ withdrawn: true, relisted: true, window_announced: false })
    expect(await listedOnVast(801)).toBe(true)
  })
})

describe('a group drain', () => {
  test('drains each server of the group and skips the one already being drained', async () => {
    const group = await ok<{ id: string }>(await api(app, owner, 'POST', '/groups', { json: { name: 'drain rack' } }), 201)
    const [a, b] = [await insertServer(app, owner.tenantId, 'rack-a'), await insertServer(app, owner.tenantId, 'rack-b')]
    for (const s of [a, b]) await ok(await api(app, owner, 'PATCH', `/servers/${s}`, { json: { group_id: group.id } }))
    // rack-a runs a rental the operator declared: its drain waits for it.
    await ok(await api(app, owner, 'PATCH', `/servers/${a}`, { json: { rental_active: true } }))
    const first = await ok<Drain>(await api(app, owner, 'POST', `/servers/${a}/drain`, { json: {} }), 201)
    expect(first.state).toBe('awaiting_rental_end')
    const answer = await ok<{ items: Drain[]; skipped: { server_id: string; reason: string }[] }>(
      await api(app, owner, 'POST', `/groups/${group.id}/drain`, { json: { reason: 'rack power work', window: { category: 'power' } } }),
    )
    expect(answer.items.map((d) => [d.server_id, (d as Drain & { group_id: string }).group_id])).toEqual([[b, group.id]])
    expect(answer.skipped).toEqual([{ server_id: a, reason: 'the server is already being drained' }])
    // The answer comes before the first steps; then, not linked anywhere and idle: nothing to take off, nothing to wait for.
    expect(answer.items[0]!.state).toBe('draining')
    expect(await eventually(async () => ((await getDrain(answer.items[0]!.id)).state === 'done' ? 'done' : null))).toBe('done')
    // The rental's end moves rack-a's drain on at once (the server.rental_ended reaction), without the job.
    await ok(await api(app, owner, 'PATCH', `/servers/${a}`, { json: { rental_active: false } }))
    expect((await eventually(async () => ((await getDrain(first.id)).state === 'done' ? 'done' : null))) as string).toBe('done')
    expect((await api(app, stranger, 'POST', `/groups/${group.id}/drain`, { json: {} })).status).toBe(404)
  })
})
