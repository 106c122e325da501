import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { insertServer } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { api, newOwner, ok, type Owner } from '../support/fleet'
import { expectProblem } from '../support/problem'

/**
 * Issue 39, renter reports: the marketplaces.sync job reads each linked marketplace_a machine's
 * reports from the Vast simulator over real HTTP (GET /api/v0/machines/{id}/reports/), keeps each
 * once, opens one alert incident with an `error` notification per new report, lists them at
 * GET /servers/{id}/renter-reports, and keeps another tenant's server a plain 404.
 */

const KEY = 'vast-reports-key-0123456789abcdef'
const VAST_OWNER = 5151
const REPORT = { problem: 'Machine Performance Is Less Than Expected', message: 'GPU utilization is inconsistent.' }

let simA: MarketplaceASim
let app: TestApp
let owner: Owner
let stranger: Owner
let rig: string
let quiet: string
let theirs: string
let nowS: number

type Incident = {
  id: string
  kind: string
  state: string
  server_id: string | null
  marketplace: string | null
  occurrences: number
  title: string
  detail: string
  notifications: { category: string }[]
}
type ReportItem = {
  id: string
  server_id: string
  marketplace: string
  external_machine_id: string
  problem: string | null
  message: string | null
  reported_at: string | null
  seen_at: string
  alerted: boolean
}

beforeAll(async () => {
  simA = await startMarketplaceA({ rateScale: 0.05, owners: [{ id: VAST_OWNER, email: 'reports@example.com', keys: [{ key: KEY, label: 'reports' }] }] })
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_PACE_PERCENT: '20', LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'reports', 'pro')
  stranger = await newOwner(app, 'reports-other', 'pro')
  rig = await insertServer(app, owner.tenantId, 'rig-reported')
  quiet = await insertServer(app, owner.tenantId, 'rig-quiet')
  theirs = await insertServer(app, stranger.tenantId, 'their-rig')
  nowS = Math.floor(app.deps.clock.nowUs() / 1_000_000)
  simA.putMachine(VAST_OWNER, 701, { hostname: 'rig-701', num_gpus: 2 })
  // The platform says this one has no reports: the sync does not ask for them.
  simA.putMachine(VAST_OWNER, 702, { hostname: 'rig-702', num_reports: 0 })
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY } }))
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: rig, marketplace: 'marketplace_a', external_machine_id: '701' } }), 201)
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: quiet, marketplace: 'marketplace_a', external_machine_id: '702' } }), 201)
})
afterAll(async () => {
  await app.close()
  await simA.stop()
})

async function sync(): Promise<string> {
  const run = await ok<{ outcome: string; detail: string }>(app.fetch('/api/v1/_test/jobs/marketplaces.sync/run', { method: 'POST' }))
  expect(run.outcome).toBe('succeeded')
  return run.detail
}
const incidents = async () => (await ok<{ items: Incident[] }>(await api(app, owner, 'GET', '/alerts?kind=renter_report'))).items
const reportsOf = async (server: string, who: Owner = owner) =>
  (await ok<{ items: ReportItem[] }>(await api(app, who, 'GET', `/servers/${server}/renter-reports`))).items
const reportEvents = async () =>
  (await ok<{ items: { kind: string }[] }>(await api(app, owner, 'GET', `/servers/${rig}/events?limit=200`))).items.filter(
    (e) => e.kind === 'marketplace.renter_report',
  )

describe('renter reports', () => {
  test('a machine without reports gives none and no alert', async () => {
    expect(await sync()).toContain('renter reports: 1 machines read, 0 new, 0 failed')
    expect(await reportsOf(rig)).toEqual([])
    expect(await incidents()).toEqual([])
    // Asked for the machine whose list entry did not say, never for the one that said none.
    const asked = simA.requests().filter((r) => r.endpoint === 'reports')
    expect(asked.map((r) => [r.method, r.path, r.status])).toEqual([['GET', '/api/v0/machines/701/reports/', 200]])
  })

  test('a new report arrives once as an alert incident with an error notification; the next sync does not repeat it', async () => {
    simA.setReports(701, [{ ...REPORT, created_at: nowS + 60 }])
    expect(await sync()).toContain('renter reports: 1 machines read, 1 new, 0 failed')
    const [incident, ...more] = await incidents()
    expect(more).toEqual([])
    expect(incident).toMatchObject({ kind: 'renter_report', state: 'open', server_id: rig, marketplace: 'marketplace_a', occurrences: 1 })
    expect(incident!.title).toBe(`Renter reported ${REPORT.problem}: rig-reported`)
    expect(incident!.detail).toContain(REPORT.message)
    expect(incident!.notifications.map((n) => n.category)).toEqual(['error'])

    expect(await sync()).toContain('renter reports: 1 machines read, 0 new, 0 failed')
    expect(await incidents()).toHaveLength(1)
    expect((await incidents())[0]!.occurrences).toBe(1)
    expect(await reportEvents()).toHaveLength(1)
    expect(await reportsOf(rig)).toHaveLength(1)
  })

  test('GET /servers/{id}/renter-reports lists it with the renter’s words and times', async () => {
    const [r] = await reportsOf(rig)
    expect(r).toMatchObject({
      server_id: rig,
      marketplace: 'marketplace_a',
      external_machine_id: '701',
      problem: REPORT.problem,
      message: REPORT.message,
      reported_at: new Date((nowS + 60) * 1000).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z'),
      alerted: true,
    })
    expect(await reportsOf(quiet)).toEqual([])
  })

  test('a report older than the link is kept as history without an alert; a second new one opens its own incident', async () => {
    // A NUL no database stores is dropped from the renter's words, not a reason to refuse the report.
    const old = { problem: 'Other', message: 'slow disk\u0000 last month', created_at: nowS - 30 * 86400 }
    const second = { problem: 'GPU Not Working', message: 'GPU 1 fell off the bus', created_at: nowS + 120 }
    simA.setReports(701, [second, { ...REPORT, created_at: nowS + 60 }, old])
    expect(await sync()).toContain('renter reports: 1 machines read, 2 new, 0 failed')
    // Newest read first; within one sync, in the renters' order.
    const items = await reportsOf(rig)
    expect(items.map((r) => [r.problem, r.alerted])).toEqual([
      ['GPU Not Working', true],
      ['Other', false],
      [REPORT.problem, true],
    ])
    expect(items[1]!.message).toBe('slow disk last month')
    expect((await incidents()).map((i) => i.title).sort()).toEqual([
      'Renter reported GPU Not Working: rig-reported',
      `Renter reported ${REPORT.problem}: rig-reported`,
    ])
    expect(await reportEvents()).toHaveLength(2)
  })

  test('the reads are in the server’s operations log as the system, and the key is in no answer', async () => {
    const ops = await ok<{ items: { operation: string; actor: { kind: string }; path: string }[] }>(await api(app, owner, 'GET', `/servers/${rig}/operations`))
    const reads = ops.items.filter((o) => o.operation === 'machine.reports')
    expect(reads.length).toBeGreaterThanOrEqual(3)
    expect(reads.every((o) => o.actor.kind === 'system' && o.path === '/api/v0/machines/701/reports/')).toBe(true)
    expect(JSON.stringify(await reportsOf(rig)) + JSON.stringify(ops)).not.toContain(KEY)
  })

  test('another tenant’s server is a plain 404, and that tenant sees none of these reports', async () => {
    await expectProblem(await api(app, stranger, 'GET', `/servers/${rig}/renter-reports`), 404, 'not_found')
    expect(await reportsOf(theirs, stranger)).toEqual([])
    expect((await ok<{ items: unknown[] }>(await api(app, stranger, 'GET', '/alerts?kind=renter_report'))).items).toEqual([])
    await expectProblem(await api(app, owner, 'GET', `/servers/${theirs}/renter-reports`), 404, 'not_found')
  })
})
