import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { utcDay } from '../../src/platform/time'
import { call, insertServer, newTenant, setPlan, type Member } from '../support/access'
import { startEarlyInUtcDay, startTestApp, type TestApp } from '../support/app'

/**
 * Issue 35, finding 2: one earnings story. Each row gives gross accrued, the platform's cut (the
 * rate entered in the cost basis, else the platform's published default, else unknown, and which),
 * net, and the platform's own figure beside it with the difference; `reconciliation` sums them and
 * compares the platform's figure with gpuhq's net only on the machines and days the platform
 * reported, never a week's accrual against a day's report (the demo's 6×). The first report read
 * goes back a week, so the days accrued before it have the platform's figure too.
 */

const KEY_A = 'vast-reconcile-key-0123456789abcdef'
const KEY_B = 'clore-reconcile-key-5f2e9a17c3'
const VAST_OWNER = 7373
const DAY_US = 86_400_000_000

type Row = Record<string, any> & { day: string; server_id: string; marketplace: string; earn_usd_day: string | null; earn_usd_accrued: string }
type Rec = {
  marketplace: string | null
  gross_usd: string
  platform_cut_usd: string | null
  cut_rates: { currency: string; percent: string | null; source: string }[]
  net_usd: string | null
  reported: { rows: number; net_usd: string | null; platform_usd: string; difference_usd: string | null }
}
type Earnings = { items: Row[]; reconciliation: { total: Rec; by_marketplace: Rec[]; labels: Record<string, string> } }

let simA: MarketplaceASim
let simB: MarketplaceBSim
let app: TestApp
let owner: Member
let sA: string
let sB: string

beforeAll(async () => {
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: VAST_OWNER, email: 'reconcile@example.com', keys: [{ key: KEY_A, label: 'r' }] }] })
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    currencyRatesInUsd: { bitcoin: 60000, 'CLORE-Blockchain': 0.0025, 'USD-Blockchain': 1 },
    owners: {
      [KEY_B]: {
        label: 'r',
        userId: 7,
        servers: [
          {
            name: 'rig-b',
            id: 63,
            online: true,
            visibility: 'public',
            specs: { gpu: '1x NVIDIA GeForce RTX 3090' },
            pricing: { 'CLORE-Blockchain': 2000 },
            rentals: [{ id: 903, spot: true, currency: 'CLORE-Blockchain', price: 1440, renter: 'clore-renter-key-r' }],
          },
        ],
      },
    },
  })
  app = await startTestApp({ MARKETPLACE_A_API_URL: simA.url, MARKETPLACE_B_API_URL: simB.url })
  await startEarlyInUtcDay(app) // these tests read today's figures while they move the clock on
  owner = await newTenant(app, 'reconcile')
  await setPlan(app, owner.tenantId, 'pro')
  sA = await insertServer(app, owner.tenantId, 'rig-a')
  sB = await insertServer(app, owner.tenantId, 'rig-b')
  // Two cards at 0.50 USD per GPU-hour, rented on demand: 24 USD a day before Vast's cut.
  simA.putMachine(VAST_OWNER, 821, { hostname: 'rig-821', listed: true, num_gpus: 2, gpu_name: 'RTX 4090', listed_gpu_cost: 0.5 })
  simA.addRental(821, { kind: 'on_demand', gpus: 2, running: true })
  const today = Math.floor(app.deps.clock.nowUs() / DAY_US)
  // Vast reported five days ago (read only by a first read that goes back a week) and today.
  simA.addEarnings(VAST_OWNER, [
    { machine_id: 821, day: today - 5, gpu_earn: 18, sto_earn: 0, bwu_earn: 0, bwd_earn: 0 },
    { machine_id: 821, day: today, gpu_earn: 0.7, sto_earn: 0.05, bwu_earn: 0, bwd_earn: 0 },
  ])
  expect((await call(app, 'PUT', '/marketplaces/marketplace_a', owner, { json: { api_key: KEY_A } })).status).toBe(200)
  expect((await call(app, 'PUT', '/marketplaces/marketplace_b', owner, { json: { api_key: KEY_B } })).status).toBe(200)
  for (const [server, marketplace, machine] of [
    [sA, 'marketplace_a', '821'],
    [sB, 'marketplace_b', '63'],
  ] as const)
    expect((await call(app, 'POST', '/marketplaces/links', owner, { json: { server_id: server, marketplace, external_machine_id: machine } })).status).toBe(201)
  await job('marketplaces.sync')
  await job('earnings.sample')
  await clock(3600 - 60)
  await job('marketplaces.sync')
  await clock(60)
  await job('earnings.sample')
})
afterAll(async () => {
  await app.close()
  await simA.stop()
  await simB.stop()
})

async function job(name: string): Promise<void> {
  const res = await app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' })
  expect(((await res.json()) as { outcome: string }).outcome).toBe('succeeded')
}
const clock = async (advance_seconds: number) =>
  expect((await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds } })).status).toBe(200)
async function earnings(): Promise<Earnings> {
  const res = await call(app, 'GET', '/marketplaces/earnings', owner)
  expect(res.status).toBe(200)
  return (await res.json()) as Earnings
}
const micros = (s: string | null) => (s === null ? null : Math.round(Number(s) * 1_000_000))
const today = () => utcDay(app.deps.clock.nowUs())

describe('without a cost basis', () => {
  test("marketplace_a's cut is unknown (it publishes none), marketplace_b's CLORE cut is its published 5 %", async () => {
    const e = await earnings()
    const a = e.items.find((r) => r.server_id === sA && r.day === today())!
    expect(a).toMatchObject({
      platform_cut_percent: null,
      platform_cut_source: 'unknown',
      platform_cut_usd: null,
      earn_usd_net: null,
      reported_difference_usd: null,
    })
    const b = e.items.find((r) => r.server_id === sB && r.day === today())!
    expect(b).toMatchObject({ platform_cut_percent: '5', platform_cut_source: 'published_default' })
    expect(micros(b.platform_cut_usd)).toBe(Math.round(micros(b.earn_usd_accrued)! * 0.05))
    expect(micros(b.earn_usd_net)).toBe(micros(b.earn_usd_accrued)! - micros(b.platform_cut_usd)!)
    expect(e.reconciliation.total).toMatchObject({ platform_cut_usd: null, net_usd: null })
    // A day nothing was earned takes no cut, whatever the rate: it never makes a total unknown.
    const idle = e.items.find((r) => r.server_id === sA && r.earn_usd_accrued === '0.00')!
    expect(idle).toMatchObject({ platform_cut_usd: '0.00', earn_usd_net: '0.00', reported_difference_usd: '18.00' })
    const rb = e.reconciliation.by_marketplace.find((r) => r.marketplace === 'marketplace_b')!
    expect(micros(rb.net_usd)).toBe(micros(rb.gross_usd)! - micros(rb.platform_cut_usd)!)
    expect(e.reconciliation.by_marketplace.find((r) => r.marketplace === 'marketplace_b')!.cut_rates).toContainEqual({
      currency: 'CLORE-Blockchain',
      percent: '5',
      source: 'published_default',
    })
  })
})

describe('with the cut entered', () => {
  test('each row: gross, the entered cut, net, and the platform figure minus net', async () => {
    expect((await call(app, 'PUT', '/billing/cost-basis', owner, { json: { marketplaces: { marketplace_a: { commission_percent: '25' } } } })).status).toBe(200)
    const e = await earnings()
    const a = e.items.find((r) => r.server_id === sA && r.day === today())!
    const gross = micros(a.earn_usd_accrued)!
    expect(gross).toBeGreaterThan(900_000)
    expect(a).toMatchObject({ platform_cut_percent: '25', platform_cut_source: 'entered', earn_usd_day: '0.75' })
    expect(micros(a.platform_cut_usd)).toBe(Math.round(gross * 0.25))
    expect(micros(a.earn_usd_net)).toBe(gross - micros(a.platform_cut_usd)!)
    expect(micros(a.reported_difference_usd)).toBe(750_000 - micros(a.earn_usd_net)!)
  })

  test("the first report read went back a week: a day accrued by nobody still shows the platform's figure", async () => {
    const e = await earnings()
    const old = e.items.find((r) => r.server_id === sA && r.day === utcDay(app.deps.clock.nowUs() - 5 * DAY_US))
    expect(old).toMatchObject({ earn_usd_day: '18.00', earn_usd_accrued: '0.00', earn_usd_net: '0.00', reported_difference_usd: '18.00' })
  })

  test("the reconciliation sums gross, cut and net, and sets the platform's figure only beside gpuhq's net on the rows it reported", async () => {
    const { items, reconciliation } = await earnings()
    const sum = (rows: Row[], f: string) => rows.reduce((acc, r) => acc + micros(r[f])!, 0)
    const a = items.filter((r) => r.marketplace === 'marketplace_a')
    const ra = reconciliation.by_marketplace.find((r) => r.marketplace === 'marketplace_a')!
    expect(micros(ra.gross_usd)).toBe(sum(a, 'earn_usd_accrued'))
    expect(micros(ra.platform_cut_usd)).toBe(sum(a, 'platform_cut_usd'))
    expect(micros(ra.net_usd)).toBe(sum(a, 'earn_usd_net'))
    const reported = a.filter((r) => r.earn_usd_day !== null)
    expect(ra.reported.rows).toBe(reported.length)
    expect(micros(ra.reported.platform_usd)).toBe(sum(reported, 'earn_usd_day'))
    expect(micros(ra.reported.net_usd)).toBe(sum(reported, 'earn_usd_net'))
    expect(micros(ra.reported.difference_usd)).toBe(micros(ra.reported.platform_usd)! - micros(ra.reported.net_usd)!)
    expect(ra.cut_rates).toEqual([{ currency: 'USD', percent: '25', source: 'entered' }])
    // marketplace_b reports nothing: its accrual is in the gross, never in the comparison.
    const rb = reconciliation.by_marketplace.find((r) => r.marketplace === 'marketplace_b')!
    expect(rb.reported).toEqual({ rows: 0, net_usd: '0.00', platform_usd: '0.00', difference_usd: null })
    expect(micros(reconciliation.total.gross_usd)).toBe(micros(ra.gross_usd)! + micros(rb.gross_usd)!)
    expect(reconciliation.total.reported).toEqual(ra.reported)
    expect(reconciliation.labels.gross_usd).toContain('before the platform')
    expect(reconciliation.labels['reported.platform_usd']).toBe('Reported by the platform')
  })
})
