import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { addMember, insertServer, mintPat, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import {
  addServers,
  adjust,
  clockTo,
  getBilling,
  getJson,
  ledgerAll,
  micros,
  payer,
  runCharges,
  setZone,
  topUp,
  US_PER_DAY,
  US_PER_HOUR,
  US_PER_MINUTE,
  usOf,
  type LedgerItem,
} from '../support/billing'
import { addDays, csvRecords, localDate, mondayOf, report, sumBy, UNLIMITED_REPORTS } from './support'

/**
 * Issue 21, the spend report: gpuhq's hourly charges, operator adjustments and top-ups, summed by
 * the member's own days (Asia/Kolkata, +05:30, so an hour starting at 18:00 UTC belongs to the
 * local day before the one of 19:00 UTC). Every expected figure is computed here from the ledger
 * rows (GET /billing/ledger) and the charge calculations, never from the report's own code.
 */

const ZONE = 'Asia/Kolkata'

type Figures = { charges_usd: string; adjustments_usd: string; spend_usd: string; topups_usd: string; charged_hours: number; server_hours: number }
type Spend = {
  report: 'spend'
  from: string
  to: string
  days: number
  group_by: string
  timezone: string
  from_at: string
  to_at: string
  total: Figures
  periods: (Figures & { period: string; from: string; to: string; from_at: string; to_at: string })[]
  servers: { server_id: string; name: string; server_hours: number; charges_usd: string }[]
}

let app: TestApp
let owner: Member
let rigs: string[]
let start: number
beforeAll(async () => {
  app = await startTestApp({ ...UNLIMITED_REPORTS, LOG_LEVEL: 'silent' })
  owner = await payer(app, 'starter', 'spend')
  await setZone(app, owner, ZONE)
  // 17:20 UTC (22:50 in Kolkata), two days ahead: two rigs, a third a day later, charges for three days.
  start = (Math.floor(app.deps.clock.nowUs() / US_PER_DAY) + 2) * US_PER_DAY + 17 * US_PER_HOUR + 20 * US_PER_MINUTE
  await clockTo(app, start)
  rigs = await addServers(app, owner.tenantId, 2, 'rig')
  await clockTo(app, start + 26 * US_PER_HOUR)
  // A name a spreadsheet would run as a formula, with a quote and a comma: the CSV must keep it text.
  rigs.push(await insertServer(app, owner.tenantId, '=rig "3", spare'))
  await adjust(app, owner.tenantId, '-1.25', 'hardware fee')
  await topUp(app, owner.tenantId, 10_000_000)
  await clockTo(app, start + 50 * US_PER_HOUR)
  await adjust(app, owner.tenantId, '0.40', 'goodwill')
  await topUp(app, owner.tenantId, -2_000_000)
  await clockTo(app, start + 3 * US_PER_DAY + 2 * US_PER_HOUR)
  await runCharges(app)
})
afterAll(() => app.close())

type Calc = { id: string; servers: number; server_ids: string }
const calculations = async () =>
  new Map(
    ((await app.deps.db.all(sql`SELECT id, servers, server_ids FROM charge_calculations WHERE tenant_id = ${owner.tenantId}`)) as Calc[]).map((c) => [
      c.id,
      { servers: c.servers, ids: JSON.parse(c.server_ids) as string[] },
    ]),
  )

/** An hour's charge split over its servers as docs/billing.md says: equal shares, the remainder to the first ids. */
function split(amount: number, ids: string[]): [string, number][] {
  const base = Math.floor(amount / ids.length)
  const rest = amount - base * ids.length
  return ids.map((id, i) => [id, base + (i < rest ? 1 : 0)])
}

/** The spend figures of ledger rows, from the rows alone. */
function expectedFigures(rows: LedgerItem[], calcs: Awaited<ReturnType<typeof calculations>>) {
  const of = (kind: string) => rows.filter((r) => r.kind === kind).reduce((n, r) => n + micros(r.amount_usd), 0)
  const charges = rows.filter((r) => r.kind === 'charge')
  return {
    charges: 0 - of('charge'),
    adjustments: 0 - of('adjustment'),
    topups: of('topup'),
    chargedHours: charges.length,
    serverHours: charges.reduce((n, r) => n + calcs.get(r.calculation_id!)!.servers, 0),
  }
}
const wire = (f: Figures) => ({
  charges: micros(f.charges_usd),
  adjustments: micros(f.adjustments_usd),
  topups: micros(f.topups_usd),
  chargedHours: f.charged_hours,
  serverHours: f.server_hours,
})

describe('the spend report', () => {
  test("sums the ledger rows of each of the member's own days to the micro-dollar, with each server's share of the charges", async () => {
    const now = app.deps.clock.nowUs()
    const from = localDate(ZONE, start)
    const to = localDate(ZONE, now)
    const { body } = await report<Spend>(app, owner, 'spend', `from=${from}&to=${to}`)
    expect(body).toMatchObject({ report: 'spend', from, to, group_by: 'day', timezone: ZONE })
    // The range's instants are the member's local midnights.
    expect(localDate(ZONE, usOf(body.from_at))).toBe(from)
    expect(localDate(ZONE, usOf(body.from_at) - 1)).toBe(addDays(from, -1))
    expect(localDate(ZONE, usOf(body.to_at))).toBe(addDays(to, 1))

    const calcs = await calculations()
    const rows = (await ledgerAll(app, owner)).filter((r) => {
      const d = localDate(ZONE, usOf(r.occurred_at))
      return d >= from && d <= to
    })
    expect(rows.filter((r) => r.kind === 'charge').length).toBeGreaterThan(50)
    expect(body.periods.map((p) => p.period)).toEqual(Array.from({ length: body.days }, (_, i) => addDays(from, i)))
    for (const p of body.periods) {
      const mine = rows.filter((r) => localDate(ZONE, usOf(r.occurred_at)) === p.period)
      expect({ period: p.period, ...wire(p) }).toEqual({ period: p.period, ...expectedFigures(mine, calcs) })
      expect(micros(p.spend_usd)).toBe(micros(p.charges_usd) + micros(p.adjustments_usd))
    }
    expect(wire(body.total)).toEqual(expectedFigures(rows, calcs))
    expect({ adjustments: body.total.adjustments_usd, topups: body.total.topups_usd }).toEqual({ adjustments: '0.85', topups: '8.00' })

    const perServer = new Map<string, { micros: number; hours: number }>()
    for (const r of rows.filter((x) => x.kind === 'charge'))
      for (const [id, share] of split(-micros(r.amount_usd), calcs.get(r.calculation_id!)!.ids)) {
        const s = perServer.get(id) ?? { micros: 0, hours: 0 }
        s.micros += share
        s.hours++
        perServer.set(id, s)
      }
    expect(body.servers.map((s) => s.server_id).sort()).toEqual([...rigs].sort())
    for (const s of body.servers)
      expect({ id: s.server_id, micros: micros(s.charges_usd), hours: s.server_hours }).toEqual({ id: s.server_id, ...perServer.get(s.server_id)! })
    expect(body.servers.reduce((n, s) => n + micros(s.charges_usd), 0)).toBe(micros(body.total.charges_usd))
  })

  test('weeks run Monday to Sunday, named by their Monday, clipped to the range, and add up to the days', async () => {
    const to = localDate(ZONE, app.deps.clock.nowUs())
    const from = addDays(to, -20)
    const days = (await report<Spend>(app, owner, 'spend', `from=${from}&to=${to}`)).body
    const weeks = (await report<Spend>(app, owner, 'spend', `from=${from}&to=${to}&group_by=week`)).body
    expect(weeks.group_by).toBe('week')
    expect(weeks.periods[0]!.from).toBe(from)
    expect(weeks.periods.at(-1)!.to).toBe(to)
    for (const w of weeks.periods) {
      expect(w.period).toBe(mondayOf(w.from))
      const inside = days.periods.filter((d) => mondayOf(d.period) === w.period)
      expect(w.from).toBe(inside[0]!.period)
      expect(w.to).toBe(inside.at(-1)!.period)
      expect(micros(w.spend_usd)).toBe(inside.reduce((n, d) => n + micros(d.spend_usd), 0))
      expect(w.server_hours).toBe(inside.reduce((n, d) => n + d.server_hours, 0))
    }
    const months = (await report<Spend>(app, owner, 'spend', `from=${from}&to=${to}&group_by=month`)).body
    expect(months.periods.map((m) => m.period)).toEqual([...new Set(days.periods.map((d) => d.period.slice(0, 7)))])
    expect(months.total).toEqual(days.total)
  })

  test('by default it covers the last 7 days of the member, and its spend is the 7d tile of GET /billing', async () => {
    const { body } = await report<Spend>(app, owner, 'spend')
    const tile = (await getBilling(app, owner)).tiles['7d']
    expect(body.days).toBe(7)
    expect(body.to).toBe(localDate(ZONE, app.deps.clock.nowUs()))
    expect({ spend: body.total.spend_usd, from: body.from_at, to: body.to_at }).toEqual({ spend: tile.spend_usd, from: tile.from, to: tile.to })
  })

  test("a member in UTC gets UTC days, and each server's charges are its rows of the per-server CSVs of those days", async () => {
    const viewer = await addMember(app, owner.tenantId, 'viewer')
    const from = localDate('UTC', start)
    const to = localDate('UTC', app.deps.clock.nowUs())
    const { body } = await report<Spend>(app, viewer, 'spend', `from=${from}&to=${to}`)
    expect(body.timezone).toBe('UTC')
    expect(body.from_at).toBe(`${from}T00:00:00.000000Z`)
    const csvRows: Record<string, string>[] = []
    for (let d = from; d <= to; d = addDays(d, 1)) {
      const res = await app.fetch(`/api/v1/billing/charges/${d}.csv`, { headers: { cookie: `__Host-gpuhq_session=${viewer.session}` } })
      csvRows.push(...csvRecords(await res.text()))
    }
    const amounts = sumBy(
      csvRows,
      (r) => r.server_id!,
      (r) => micros(r.amount_usd),
    )
    const hours = sumBy(
      csvRows,
      (r) => r.server_id!,
      (r) => Number(r.hours),
    )
    for (const s of body.servers)
      expect({ id: s.server_id, micros: micros(s.charges_usd), hours: s.server_hours }).toEqual({
        id: s.server_id,
        micros: amounts.get(s.server_id)!,
        hours: hours.get(s.server_id)!,
      })
    expect(body.servers.length).toBe(amounts.size)
  })

  test('as CSV: a row per period and server charged, then the adjustments and top-ups, amounts as the ledger books them', async () => {
    const from = localDate(ZONE, start)
    const to = localDate(ZONE, app.deps.clock.nowUs())
    const { res, text } = await report<string>(app, owner, 'spend', `from=${from}&to=${to}&format=csv`)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="gpuhq-spend-${from}-${to}.csv"`)
    expect(text.split('\r\n')[0]).toBe('period,period_from,period_to,kind,server_id,server_name,server_hours,ledger_amount_usd')
    const records = csvRecords(text)
    const rows = (await ledgerAll(app, owner)).filter((r) => {
      const d = localDate(ZONE, usOf(r.occurred_at))
      return d >= from && d <= to
    })
    // Every kind sums to the ledger's own rows, and all of them to the balance's change over the range.
    for (const kind of ['charge', 'adjustment', 'topup'])
      expect(records.filter((r) => r.kind === kind).reduce((n, r) => n + micros(r.ledger_amount_usd), 0)).toBe(
        rows.filter((r) => r.kind === kind).reduce((n, r) => n + micros(r.amount_usd), 0),
      )
    // The formula-like name is text to a spreadsheet: a leading quote, the cell quoted, its quotes doubled.
    expect(records.find((r) => r.server_id === rigs[2])!.server_name).toBe(`'=rig "3", spare`)
    expect(text).toContain(`,"'=rig ""3"", spare",`)
    const json = (await report<Spend>(app, owner, 'spend', `from=${from}&to=${to}`)).body
    const fromCsv = sumBy(
      records.filter((r) => r.kind === 'charge'),
      (r) => r.server_id!,
      (r) => -micros(r.ledger_amount_usd),
    )
    for (const s of json.servers) expect(fromCsv.get(s.server_id)).toBe(micros(s.charges_usd))
  })

  test('a token limited to some servers is refused spend, which spans every server', async () => {
    const pat = (await mintPat(app, owner, { scopes: ['billing:read'], server_allowlist: [rigs[0]] })).token
    const body = await getJson(app, pat, '/reports/spend', 403)
    expect(body.code).toBe('forbidden')
  })
})
