import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { addMember, call, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import {
  addServers,
  adjust,
  clockTo,
  getBilling,
  ledgerAll,
  micros,
  payer,
  RANGES,
  runCharges,
  setZone,
  spendOf,
  topUp,
  usOf,
  utcUs,
  type Billing,
  type RangeName,
} from '../support/billing'
import { expectProblem } from '../support/problem'

/**
 * GET /billing: balance, tariff, estimate, days left, account state, and the spend tiles in the
 * member's own time zone; GET /billing/ledger?range=… sums to the same tiles. One tenant's history
 * from late January to "now" = 2027-03-11T00:40Z (Berlin 01:40, Kolkata 06:10, UTC 00:40).
 */
let app: TestApp
let owner: Member
let viewer: Member
type Entry = { kind: string; amount: number; at: number }
const entries: Entry[] = []
const NOW = utcUs(2027, 3, 11, 0, 40)

async function adjustAt(us: number, amount: string) {
  await clockTo(app, us)
  const row = await adjust(app, owner.tenantId, amount)
  entries.push({ kind: 'adjustment', amount: row.amountMicros, at: row.occurredAt })
}
async function topUpAt(us: number, amount: number) {
  await clockTo(app, us)
  const row = await topUp(app, owner.tenantId, amount)
  entries.push({ kind: 'topup', amount, at: row.occurredAt })
}

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent', SESSION_IDLE_SECONDS: String(365 * 86400), SESSION_ABSOLUTE_SECONDS: String(365 * 86400) })
  await clockTo(app, utcUs(2027, 1, 25, 9))
  owner = await payer(app, 'starter', 'tiles')
  viewer = await addMember(app, owner.tenantId, 'viewer')
  await adjustAt(utcUs(2027, 1, 25, 10), '-3.00') // before every tile
  await adjustAt(utcUs(2027, 1, 31, 23, 30), '-2.00') // Berlin and Kolkata: February; UTC: January
  await topUpAt(utcUs(2027, 2, 15, 12), 50_000_000)
  await adjustAt(utcUs(2027, 2, 28, 19), '-4.00') // Berlin, UTC: February; Kolkata: March 1st
  await adjustAt(utcUs(2027, 3, 5, 10), '1.00') // a credit: negative spend
  await adjustAt(utcUs(2027, 3, 9, 23, 30), '-0.25') // Berlin, Kolkata: yesterday; UTC: two days ago
  await clockTo(app, utcUs(2027, 3, 10, 12, 10))
  await addServers(app, owner.tenantId, 2) // charges for 12:00Z … 23:00Z on March 10th
  await topUpAt(utcUs(2027, 3, 10, 23, 50), 5_000_000)
  await clockTo(app, NOW)
  await runCharges(app)
  for (const r of await ledgerAll(app, owner, { kind: 'charge' })) entries.push({ kind: 'charge', amount: micros(r.amount_usd), at: usOf(r.occurred_at) })
  await adjustAt(NOW + 60_000_000, '-0.10')
})
afterAll(() => app.close())

const Z = (s: string) => `${s}.000000Z`
const BOUNDS: Record<string, Record<RangeName, [string, string]>> = {
  'Europe/Berlin': {
    today: [Z('2027-03-10T23:00:00'), Z('2027-03-11T23:00:00')],
    yesterday: [Z('2027-03-09T23:00:00'), Z('2027-03-10T23:00:00')],
    '7d': [Z('2027-03-04T23:00:00'), Z('2027-03-11T23:00:00')],
    month: [Z('2027-02-28T23:00:00'), Z('2027-03-31T22:00:00')], // summer time from March 28th
    prev_month: [Z('2027-01-31T23:00:00'), Z('2027-02-28T23:00:00')],
  },
  'Asia/Kolkata': {
    today: [Z('2027-03-10T18:30:00'), Z('2027-03-11T18:30:00')],
    yesterday: [Z('2027-03-09T18:30:00'), Z('2027-03-10T18:30:00')],
    '7d': [Z('2027-03-04T18:30:00'), Z('2027-03-11T18:30:00')],
    month: [Z('2027-02-28T18:30:00'), Z('2027-03-31T18:30:00')],
    prev_month: [Z('2027-01-31T18:30:00'), Z('2027-02-28T18:30:00')],
  },
  UTC: {
    today: [Z('2027-03-11T00:00:00'), Z('2027-03-12T00:00:00')],
    yesterday: [Z('2027-03-10T00:00:00'), Z('2027-03-11T00:00:00')],
    '7d': [Z('2027-03-05T00:00:00'), Z('2027-03-12T00:00:00')],
    month: [Z('2027-03-01T00:00:00'), Z('2027-04-01T00:00:00')],
    prev_month: [Z('2027-02-01T00:00:00'), Z('2027-03-01T00:00:00')],
  },
}
/** Spend of [from, to) from what the test itself booked: minus charges and adjustments, top-ups left out. */
const expectedSpend = (from: string, to: string) =>
  0 - entries.filter((e) => e.kind !== 'topup' && e.at >= usOf(from) && e.at < usOf(to)).reduce((s, e) => s + e.amount, 0)

describe('GET /billing: balance, tariff, estimate and days left', () => {
  test('a starter tenant with two servers sees its balance, 2.00 per server, the day and month estimate and the days its balance covers', async () => {
    const b = await getBilling(app, owner)
    const balance = entries.reduce((s, e) => s + e.amount, 0)
    expect(micros(b.balance_usd)).toBe(balance)
    expect(b.balance_usd).toBe('46.585488')
    expect(b.account_state).toBe('active')
    expect([b.grace_since, b.grace_ends_at, b.frozen_at]).toEqual([null, null, null])
    expect(b.tariff).toEqual({ plan: 'starter', label: 'Starter', monthly_price_per_server_usd: '2.00', contract_priced: false, servers_max: 10 })
    // March has 31 days: 2 × 2.00 ÷ 31 = 0.129032 a day.
    expect(b.estimate).toEqual({ managed_servers: 2, per_day_usd: '0.129032', per_month_usd: '4.00', days_in_month: 31 })
    expect(b.days_left).toBe(Math.floor(balance / 129_032))
    expect(b.days_left).toBe(361)
  })

  test('contract-priced and free tenants get no price-based estimate and no days left', async () => {
    const ent = await payer(app, 'enterprise', 'ent')
    await addServers(app, ent.tenantId, 3)
    const e = await getBilling(app, ent)
    expect(e.tariff).toMatchObject({ plan: 'enterprise', monthly_price_per_server_usd: null, contract_priced: true, servers_max: null })
    expect(e.estimate).toMatchObject({ managed_servers: 3, per_day_usd: null, per_month_usd: null })
    expect(e.days_left).toBeNull()
    const free = await payer(app, 'free', 'free')
    await addServers(app, free.tenantId, 1)
    const f = await getBilling(app, free)
    expect(f.estimate).toMatchObject({ managed_servers: 1, per_day_usd: '0.00', per_month_usd: '0.00' })
    expect(f.days_left).toBeNull()
    expect(f.balance_usd).toBe('0.00')
  })

  test('a balance below zero covers zero days', async () => {
    const t = await payer(app, 'starter', 'broke')
    await addServers(app, t.tenantId, 1)
    await adjust(app, t.tenantId, '-1.00')
    const b = await getBilling(app, t)
    expect(b.balance_usd).toBe('-1.00')
    expect(b.days_left).toBe(0)
  })

  test('it needs a session (401) and money is never a JSON number', async () => {
    await expectProblem(await call(app, 'GET', '/billing', null), 401, 'unauthorized')
    const raw = await (await call(app, 'GET', '/billing', owner)).text()
    expect(raw).not.toMatch(/_usd":\s*-?[0-9]/)
  })
})

describe("tiles and ranges in the member's time zone", () => {
  for (const zone of ['Europe/Berlin', 'Asia/Kolkata', 'UTC'])
    test(`in ${zone} each tile covers the local calendar period, sums its charges and adjustments without top-ups, and the ledger range of the same name adds up to it`, async () => {
      await setZone(app, owner, zone)
      const b: Billing = await getBilling(app, owner)
      expect(b.timezone).toBe(zone)
      for (const r of RANGES) {
        const [from, to] = BOUNDS[zone]![r]
        expect({ r, from: b.tiles[r].from, to: b.tiles[r].to }).toEqual({ r, from, to })
        expect({ r, spend: micros(b.tiles[r].spend_usd) }).toEqual({ r, spend: expectedSpend(from, to) })
        const rows = await ledgerAll(app, owner, { range: r })
        for (const row of rows) expect(usOf(row.occurred_at) >= usOf(from) && usOf(row.occurred_at) < usOf(to)).toBe(true)
        expect({ r, sum: spendOf(rows) }).toEqual({ r, sum: micros(b.tiles[r].spend_usd) })
        expect(rows.filter((x) => x.kind === 'topup').length).toBe(entries.filter((e) => e.kind === 'topup' && e.at >= usOf(from) && e.at < usOf(to)).length)
      }
    })

  test("the zone is the member's own: a viewer left on UTC sees UTC tiles while the owner sees Kolkata's", async () => {
    await setZone(app, owner, 'Asia/Kolkata')
    const [mine, theirs] = await Promise.all([getBilling(app, owner), getBilling(app, viewer)])
    expect(mine.tiles.today.from).toBe(BOUNDS['Asia/Kolkata']!.today[0])
    expect(theirs.timezone).toBe('UTC')
    expect(theirs.tiles.today.from).toBe(BOUNDS.UTC!.today[0])
    expect(theirs.balance_usd).toBe(mine.balance_usd)
  })

  test('a charge at the very first instant of the local day counts for today, not yesterday (Berlin midnight is 23:00Z)', async () => {
    await setZone(app, owner, 'Europe/Berlin')
    const today = await ledgerAll(app, owner, { range: 'today', kind: 'charge' })
    const yesterday = await ledgerAll(app, owner, { range: 'yesterday', kind: 'charge' })
    expect(today.map((r) => r.charge_hour)).toEqual([Z('2027-03-10T23:00:00')])
    expect(yesterday).toHaveLength(11)
    expect(yesterday.map((r) => r.charge_hour)).not.toContain(Z('2027-03-10T23:00:00'))
  })

  test('top-ups really are left out: the month with top-ups counted would differ from the tile', async () => {
    await setZone(app, owner, 'UTC')
    const b = await getBilling(app, owner)
    const rows = await ledgerAll(app, owner, { range: 'month' })
    const withTopups = 0 - rows.reduce((s, r) => s + micros(r.amount_usd), 0)
    expect(rows.some((r) => r.kind === 'topup')).toBe(true)
    expect(withTopups).not.toBe(micros(b.tiles.month.spend_usd))
    expect(micros(b.tiles.month.spend_usd)).toBe(spendOf(rows))
  })
})
