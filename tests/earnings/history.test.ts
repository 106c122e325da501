import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { accruePast } from '../../src/modules/earnings'
import { utcDay } from '../../src/platform/time'
import { call, insertServer, newTenant, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'

/**
 * accruePast, the demo's history of rentals (docs/demo.md): past spells accrued with the sample
 * job's own arithmetic and steps, read back over HTTP as the job's rows are, and the link's
 * watermark left alone.
 */

const HOUR_US = 3_600_000_000
let app: TestApp
let owner: Member
let server: string

beforeAll(async () => {
  app = await startTestApp()
  owner = await newTenant(app, 'history')
  server = await insertServer(app, owner.tenantId, 'rig-h')
})
afterAll(() => app.close())

const earnings = async () => {
  const res = await call(app, 'GET', '/marketplaces/earnings?days=7', owner)
  expect(res.status).toBe(200)
  return ((await res.json()) as { items: { day: string; server_id: string; earn_usd_accrued: string; accrued_seconds: number; samples: number }[] }).items
}

describe('accrual for time before gpuhq watched', () => {
  test('a rented spell across midnight accrues price × time on each day, in 5-minute samples; an idle spell only counts samples', async () => {
    const midnight = Math.floor(app.deps.clock.nowUs() / (24 * HOUR_US)) * 24 * HOUR_US - 24 * HOUR_US // yesterday 00:00 UTC
    const samples = await accruePast(app.deps, {
      tenantId: owner.tenantId,
      serverId: server,
      marketplace: 'marketplace_a',
      spells: [
        { fromUs: midnight - 4 * HOUR_US, toUs: midnight - HOUR_US, deals: [] },
        // Two cards on demand at 0.50 per GPU-hour: 24.00 a day, 1.00 an hour.
        { fromUs: midnight - HOUR_US, toUs: midnight + 2 * HOUR_US, deals: [{ kind: 'on_demand', currency: 'USD', priceDay: '24', gpuCount: 2 }] },
      ],
      rates: {},
    })
    expect(samples).toBe(72) // 6 hours of 5-minute steps
    const rows = (await earnings()).filter((r) => r.server_id === server).sort((a, b) => a.day.localeCompare(b.day))
    // Each 5-minute sample rounds its own piece to the micro-dollar, as the job's do: 24 × 300 ÷ 86400 = 0.083333.
    expect(rows.map((r) => [r.day, r.earn_usd_accrued, r.accrued_seconds, r.samples])).toEqual([
      [utcDay(midnight - HOUR_US), '0.999996', 3600, 48],
      [utcDay(midnight), '1.999992', 7200, 24],
    ])
    // The job's own watermark is untouched: its first sample of a link starts where it always does.
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM earnings_watermarks`)).toEqual({ n: 0 })
  })
})
