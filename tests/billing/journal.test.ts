import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { addServers, clockTo, expectedHourly, getJson, ledgerAll, micros, payer, runCharges, STARTER_MICROS, utcUs } from '../support/billing'
import { expectProblem } from '../support/problem'

/**
 * The daily charge journal (GET /billing/charges, one row per UTC day) and one day's per-server CSV
 * (GET /billing/charges/{day}.csv). Fleet, April 2027 (30 days), all hours in UTC:
 *   29th 20:10 alpha, "beta, with comma", gamma "quoted" enrolled · 30th 03:20 delta enrolled ·
 *   30th 05:40 alpha decommissioned · booked at 30th 09:30: hours 29th 20:00 … 30th 08:00.
 */
let app: TestApp
let owner: Member
let other: Member
const ids: Record<string, string> = {}
const h = (d: number, hour: number) => utcUs(2027, 4, d, hour)
/** Servers managed in each hour, by name. */
function fleetAt(hour: number): string[] {
  const names = ['beta, with comma', 'gamma "quoted"']
  if (hour < h(30, 6)) names.push('alpha')
  if (hour >= h(30, 3)) names.push('delta')
  return names
}
const hoursOfDay = (d: number) => Array.from({ length: 24 }, (_, i) => h(d, i)).filter((x) => x >= h(29, 20) && x <= h(30, 8))
const dayMicros = (d: number) => hoursOfDay(d).reduce((s, x) => s + expectedHourly(STARTER_MICROS, fleetAt(x).length, 30), 0)

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await clockTo(app, h(29, 20) + 10 * 60_000_000)
  owner = await payer(app, 'starter', 'journal')
  other = await payer(app, 'starter', 'other')
  for (const name of ['alpha', 'beta, with comma', 'gamma "quoted"']) ids[name] = (await addServers(app, owner.tenantId, 1, name))[0]!
  await clockTo(app, h(30, 3) + 20 * 60_000_000)
  ids.delta = (await addServers(app, owner.tenantId, 1, 'delta'))[0]!
  await clockTo(app, h(30, 5) + 40 * 60_000_000)
  expect((await call(app, 'POST', `/servers/${ids.alpha}/decommission`, owner)).status).toBe(200)
  await clockTo(app, h(30, 9) + 30 * 60_000_000)
  await runCharges(app)
})
afterAll(() => app.close())

type Day = { day: string; amount_usd: string; hours: number; server_hours: number; csv: string }

/** RFC 4180: quoted fields may hold commas, quotes (doubled) and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"'
        i++
      } else if (c === '"') quoted = false
      else field += c
    } else if (c === '"') quoted = true
    else if (c === ',') {
      row.push(field)
      field = ''
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field)
      rows.push(row)
      row = []
      field = ''
      i++
    } else field += c
  }
  if (field !== '' || row.length) {
    row.push(field)
    rows.push(row)
  }
  return rows
}

describe('GET /billing/charges: the daily journal', () => {
  test("one row per UTC day, newest first, whose amount is exactly that day's ledger charges", async () => {
    const { items, next_cursor } = await getJson<{ items: Day[]; next_cursor: string | null }>(app, owner, '/billing/charges')
    expect(next_cursor).toBeNull()
    expect(items.map((d) => d.day)).toEqual(['2027-04-30', '2027-04-29'])
    const charges = await ledgerAll(app, owner, { kind: 'charge' })
    for (const [d, row] of [
      [30, items[0]!],
      [29, items[1]!],
    ] as const) {
      expect(micros(row.amount_usd)).toBe(dayMicros(d))
      const ofDay = charges.filter((c) => c.charge_day === row.day)
      expect(micros(row.amount_usd)).toBe(0 - ofDay.reduce((s, c) => s + micros(c.amount_usd), 0))
      expect(row.hours).toBe(hoursOfDay(d).length)
      expect(row.server_hours).toBe(hoursOfDay(d).reduce((s, x) => s + fleetAt(x).length, 0))
      expect(row.csv).toBe(`/api/v1/billing/charges/${row.day}.csv`)
    }
  })

  test('it pages one day at a time with a cursor', async () => {
    const p1 = await getJson<{ items: Day[]; next_cursor: string | null }>(app, owner, '/billing/charges?limit=1')
    expect(p1.items.map((d) => d.day)).toEqual(['2027-04-30'])
    const p2 = await getJson<{ items: Day[]; next_cursor: string | null }>(app, owner, `/billing/charges?limit=1&cursor=${encodeURIComponent(p1.next_cursor!)}`)
    expect(p2.items.map((d) => d.day)).toEqual(['2027-04-29'])
    expect(p2.next_cursor).toBeNull()
  })

  test('a tenant without paid servers has an empty journal', async () => {
    const t = await payer(app, 'free', 'free')
    expect((await getJson(app, t, '/billing/charges')).items).toEqual([])
  })
})

describe('GET /billing/charges/{day}.csv: one day per server', () => {
  test("a real CSV with a header row, one row per server, whose amounts add up exactly to the day's charges", async () => {
    for (const d of [29, 30]) {
      const day = `2027-04-${d}`
      const res = await call(app, 'GET', `/billing/charges/${day}.csv`, owner)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toStartWith('text/csv')
      expect(res.headers.get('content-disposition')).toContain(`${day}.csv`)
      const rows = parseCsv(await res.text())
      expect(rows[0]).toEqual(['day', 'server_id', 'server_name', 'hours', 'amount_usd'])
      const body = rows.slice(1)
      for (const r of body) expect(r).toHaveLength(5)
      const names = new Set(hoursOfDay(d).flatMap(fleetAt))
      expect(body.map((r) => r[2]).sort()).toEqual([...names].sort())
      for (const r of body) {
        expect(r[0]).toBe(day)
        expect(r[1]).toBe(ids[r[2]!]!)
        expect(Number(r[3])).toBe(hoursOfDay(d).filter((x) => fleetAt(x).includes(r[2]!)).length)
      }
      expect(body.reduce((s, r) => s + micros(r[4]!), 0)).toBe(dayMicros(d))
    }
  })

  test('on the 30th alpha has its six hours until decommissioning and delta its six from enrolment', async () => {
    const rows = parseCsv(await (await call(app, 'GET', '/billing/charges/2027-04-30.csv', owner)).text())
    const hours = Object.fromEntries(rows.slice(1).map((r) => [r[2], Number(r[3])]))
    expect(hours).toEqual({ alpha: 6, 'beta, with comma': 9, 'gamma "quoted"': 9, delta: 6 })
  })

  test('a name with a comma or quotes is quoted as RFC 4180 says', async () => {
    const raw = await (await call(app, 'GET', '/billing/charges/2027-04-29.csv', owner)).text()
    expect(raw).toContain(',"beta, with comma",')
    expect(raw).toContain(',"gamma ""quoted""",')
    expect(raw.split('\r\n')[0]).toBe('day,server_id,server_name,hours,amount_usd')
  })

  test("a day without charges, or another tenant's day, is just the header", async () => {
    for (const [who, day] of [
      [owner, '2027-04-28'],
      [other, '2027-04-30'],
    ] as const) {
      const rows = parseCsv(await (await call(app, 'GET', `/billing/charges/${day}.csv`, who)).text())
      expect(rows).toEqual([['day', 'server_id', 'server_name', 'hours', 'amount_usd']])
    }
  })

  test('a day that is not a calendar date is refused with a problem, and the CSV needs a session', async () => {
    const bad = await expectProblem(await call(app, 'GET', '/billing/charges/30-04-2027.csv', owner), 422, 'validation_failed')
    expect(bad.errors?.[0]?.path).toBe('/day')
    await expectProblem(await call(app, 'GET', '/billing/charges/2027-02-30.csv', owner), 422, 'validation_failed')
    await expectProblem(await call(app, 'GET', '/billing/charges/2027-04-30.csv', null), 401, 'unauthorized')
  })
})
