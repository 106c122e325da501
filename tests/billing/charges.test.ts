import { afterEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { call } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import {
  addServers,
  clockTo,
  expectedHourly,
  getBilling,
  iso,
  ledgerAll,
  micros,
  payer,
  runCharges,
  STARTER_MICROS,
  US_PER_HOUR,
  US_PER_MINUTE,
  US_PER_SECOND,
  usOf,
  utcUs,
} from '../support/billing'
import { UUID } from '../support/problem'

/**
 * The charge rule (docs/billing.md "The charge rule"): each managed server costs the plan's monthly
 * price ÷ days of the UTC month ÷ 24 for every hour it is managed; billing.charge books an hour
 * once it is 1 h 15 min old. Each test has its own app: the clock only moves forward, and months
 * apart would otherwise mean booking every hour in between.
 */
const apps: TestApp[] = []
async function freshApp(env: Record<string, string> = {}) {
  const app = await startTestApp({ LOG_LEVEL: 'silent', ...env })
  apps.push(app)
  return app
}
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close()
})

const LAG = 75 * US_PER_MINUTE

describe('one hour of servers on starter', () => {
  const cases = [
    { month: 'February 2027 (28 days)', hour: utcUs(2027, 2, 10, 10), days: 28, servers: 3 },
    { month: 'April 2027 (30 days)', hour: utcUs(2027, 4, 14, 7), days: 30, servers: 3 },
    { month: 'May 2027 (31 days)', hour: utcUs(2027, 5, 20, 23), days: 31, servers: 3 },
    { month: 'February 2028 (29 days, leap year)', hour: utcUs(2028, 2, 29, 0), days: 29, servers: 7 },
  ]
  for (const c of cases)
    test(`in ${c.month}, ${c.servers} servers cost round(2_000_000 × ${c.servers} ÷ (${c.days} × 24)) micro-USD, booked 1 h 15 min after the hour began`, async () => {
      const app = await freshApp()
      await clockTo(app, c.hour + 5 * US_PER_MINUTE)
      const owner = await payer(app, 'starter')
      await addServers(app, owner.tenantId, c.servers)

      await clockTo(app, c.hour + LAG - 30 * US_PER_SECOND)
      await runCharges(app)
      expect(await ledgerAll(app, owner, { kind: 'charge' })).toEqual([])

      const ranAt = await clockTo(app, c.hour + LAG + 2 * US_PER_SECOND)
      await runCharges(app)
      const rows = await ledgerAll(app, owner)
      expect(rows).toHaveLength(1)
      const row = rows[0]!
      const amount = expectedHourly(STARTER_MICROS, c.servers, c.days)
      expect(micros(row.amount_usd)).toBe(-amount)
      expect(micros(row.balance_after_usd)).toBe(-amount)
      expect(row).toMatchObject({
        kind: 'charge',
        tenant_id: owner.tenantId,
        occurred_at: iso(c.hour),
        charge_hour: iso(c.hour),
        charge_day: iso(c.hour).slice(0, 10),
      })
      // The bookkeeping moment is the test clock's "now" at the run: about 1h15m after occurred_at.
      const lag = usOf(row.created_at) - usOf(row.occurred_at)
      expect(lag).toBeGreaterThanOrEqual(LAG)
      expect(usOf(row.created_at)).toBeGreaterThanOrEqual(ranAt)
      expect(lag).toBeLessThan(LAG + 60 * US_PER_SECOND)
      expect(row.id).toMatch(UUID)
      expect(row.calculation_id).toMatch(UUID)
      // The detail names plan, price, servers and days; the calculation row behind the id says the same.
      expect(row.detail).toContain('starter')
      expect(row.detail).toContain('2.00')
      expect(row.detail).toContain(`${c.servers} servers`)
      expect(row.detail).toContain(`${c.days} days`)
      const calc = (await app.deps.db.get(sql`SELECT * FROM charge_calculations WHERE id = ${row.calculation_id}`)) as Record<string, unknown>
      expect(calc).toMatchObject({
        tenant_id: owner.tenantId,
        plan_code: 'starter',
        price_micros_per_server_month: STARTER_MICROS,
        servers: c.servers,
        days_in_month: c.days,
        amount_micros: amount,
        charge_hour: c.hour,
      })
      expect(JSON.parse(calc.server_ids as string)).toHaveLength(c.servers)
      expect(micros((await getBilling(app, owner)).balance_usd)).toBe(-amount)
    })

  test('an hour is priced by the days of its own UTC month: the last hour of January and the first of February differ', async () => {
    const app = await freshApp()
    const lastOfJan = utcUs(2027, 1, 31, 23)
    await clockTo(app, lastOfJan + 10 * US_PER_MINUTE)
    const owner = await payer(app, 'starter')
    await addServers(app, owner.tenantId, 5)
    await clockTo(app, lastOfJan + US_PER_HOUR + LAG + US_PER_SECOND)
    await runCharges(app)
    const rows = (await ledgerAll(app, owner, { kind: 'charge' })).reverse()
    expect(rows.map((r) => [r.charge_hour, r.charge_day, micros(r.amount_usd)])).toEqual([
      [iso(lastOfJan), '2027-01-31', -expectedHourly(STARTER_MICROS, 5, 31)],
      [iso(lastOfJan + US_PER_HOUR), '2027-02-01', -expectedHourly(STARTER_MICROS, 5, 28)],
    ])
  })

  test('on pro the same hour costs twice as much: 4.00 per server per month', async () => {
    const app = await freshApp()
    const h = utcUs(2027, 4, 2, 12)
    await clockTo(app, h + US_PER_MINUTE)
    const owner = await payer(app, 'pro')
    await addServers(app, owner.tenantId, 11)
    await clockTo(app, h + LAG + US_PER_SECOND)
    await runCharges(app)
    const [row] = await ledgerAll(app, owner)
    expect(micros(row!.amount_usd)).toBe(-expectedHourly(4_000_000, 11, 30))
    expect(row!.detail).toContain('pro')
  })
})

describe('which servers an hour counts', () => {
  test('a server enrolled mid-hour counts for that whole hour; a decommissioned one counts for its last hour and then stops', async () => {
    const app = await freshApp()
    const h0 = utcUs(2027, 4, 5, 9)
    await clockTo(app, h0 + 5 * US_PER_MINUTE)
    const owner = await payer(app, 'starter')
    const [a] = await addServers(app, owner.tenantId, 2, 'early')
    await clockTo(app, h0 + US_PER_HOUR + 20 * US_PER_MINUTE)
    await addServers(app, owner.tenantId, 1, 'mid-hour')
    await clockTo(app, h0 + US_PER_HOUR + 40 * US_PER_MINUTE)
    expect((await call(app, 'POST', `/servers/${a}/decommission`, owner)).status).toBe(200)
    await clockTo(app, h0 + 3 * US_PER_HOUR + LAG + US_PER_SECOND)
    await runCharges(app)

    const rows = (await ledgerAll(app, owner, { kind: 'charge' })).reverse()
    const each = (n: number) => -expectedHourly(STARTER_MICROS, n, 30)
    expect(rows.map((r) => [r.charge_hour, micros(r.amount_usd)])).toEqual([
      [iso(h0), each(2)],
      [iso(h0 + US_PER_HOUR), each(3)],
      [iso(h0 + 2 * US_PER_HOUR), each(2)],
      [iso(h0 + 3 * US_PER_HOUR), each(2)],
    ])
    for (const r of rows) expect(r.detail).toMatch(/^[23] servers /)
  })

  test('a tenant whose only server was decommissioned is charged nothing for the hours after', async () => {
    const app = await freshApp()
    const h0 = utcUs(2027, 6, 1, 0)
    await clockTo(app, h0 + 30 * US_PER_MINUTE)
    const owner = await payer(app, 'starter')
    const [id] = await addServers(app, owner.tenantId, 1)
    await clockTo(app, h0 + 50 * US_PER_MINUTE)
    expect((await call(app, 'POST', `/servers/${id}/decommission`, owner)).status).toBe(200)
    await clockTo(app, h0 + 6 * US_PER_HOUR)
    await runCharges(app)
    const rows = await ledgerAll(app, owner, { kind: 'charge' })
    expect(rows.map((r) => r.charge_hour)).toEqual([iso(h0)])
  })

  test('free, contract-priced (enterprise) and plan-less tenants book nothing, while a starter tenant beside them is charged', async () => {
    const app = await freshApp()
    const h0 = utcUs(2027, 7, 1, 0)
    await clockTo(app, h0 + US_PER_MINUTE)
    const free = await payer(app, 'free', 'free')
    const ent = await payer(app, 'enterprise', 'ent')
    const none = await payer(app, null, 'none')
    const paying = await payer(app, 'starter', 'paying')
    for (const t of [free, ent, none, paying]) await addServers(app, t.tenantId, 1)
    await clockTo(app, h0 + 4 * US_PER_HOUR)
    await runCharges(app)
    for (const t of [free, ent, none]) {
      expect(await ledgerAll(app, t)).toEqual([])
      expect((await getBilling(app, t)).balance_usd).toBe('0.00')
    }
    expect(await ledgerAll(app, paying, { kind: 'charge' })).toHaveLength(3)
  })
})
