import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { addMember, auditRows, mintPat, newTenant, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { addServers, adjust, advanceBy, clockTo, micros, payer, runCharges, setZone, US_PER_DAY, US_PER_HOUR } from '../support/billing'
import { expectProblem } from '../support/problem'
import { addDays, csvRecords, localDate, report, UNLIMITED_REPORTS } from './support'

/**
 * Issue 21, what every report shares: the answer cached 60 s on the service clock with a strong
 * ETag (304 on If-None-Match), JSON or CSV by `format` or Accept, the range rules with 422 pointers,
 * an unknown report as 404, the margin report's `days` kept beside the new range, and no answer
 * crossing tenants or time zones.
 */

let app: TestApp
let owner: Member
let today: string
beforeAll(async () => {
  app = await startTestApp({ ...UNLIMITED_REPORTS, LOG_LEVEL: 'silent' })
  owner = await payer(app, 'starter', 'reports')
  const start = (Math.floor(app.deps.clock.nowUs() / US_PER_DAY) + 1) * US_PER_DAY + 9 * US_PER_HOUR
  await clockTo(app, start)
  await addServers(app, owner.tenantId, 3, 'rig')
  await clockTo(app, start + 2 * US_PER_DAY + 3 * US_PER_HOUR)
  await runCharges(app)
  today = localDate('UTC', app.deps.clock.nowUs())
})
afterAll(() => app.close())

describe('caching', () => {
  test('an answer is kept 60 seconds of the service clock: a change shows only after that, under a new ETag', async () => {
    const first = await report(app, owner, 'spend', `from=${today}&to=${today}`)
    const tag = first.res.headers.get('etag')!
    expect(tag).toMatch(/^"[A-Za-z0-9_-]{32}"$/)
    expect(first.res.headers.get('cache-control')).toBe('private, max-age=60')
    expect(first.res.headers.get('vary')).toBe('Accept, Accept-Encoding')
    await adjust(app, owner.tenantId, '-2.50', 'hardware fee')
    await advanceBy(app, 30)
    const cached = await report(app, owner, 'spend', `from=${today}&to=${today}`)
    expect(cached.res.headers.get('etag')).toBe(tag)
    expect(cached.text).toBe(first.text)
    expect(Number(cached.res.headers.get('age'))).toBeGreaterThanOrEqual(30)
    await advanceBy(app, 31)
    const fresh = await report(app, owner, 'spend', `from=${today}&to=${today}`)
    expect(fresh.res.headers.get('etag')).not.toBe(tag)
    expect(micros(fresh.body.total.adjustments_usd) - micros(first.body.total.adjustments_usd)).toBe(2_500_000)
    expect(fresh.res.headers.get('age')).toBe('0')
  })

  test('If-None-Match with the current tag answers 304 without a body, also once the answer was recomputed unchanged', async () => {
    const yesterday = addDays(today, -1)
    const first = await report(app, owner, 'spend', `from=${yesterday}&to=${yesterday}`)
    const tag = first.res.headers.get('etag')!
    const hit = await report(app, owner, 'spend', `from=${yesterday}&to=${yesterday}`, 304, { 'if-none-match': tag })
    expect(hit.text).toBe('')
    expect({ etag: hit.res.headers.get('etag'), cache: hit.res.headers.get('cache-control') }).toEqual({ etag: tag, cache: 'private, max-age=60' })
    await advanceBy(app, 61)
    // A strong tag of the bytes: the same figures recomputed are the same representation.
    await report(app, owner, 'spend', `from=${yesterday}&to=${yesterday}`, 304, { 'if-none-match': `"other", ${tag}` })
    await report(app, owner, 'spend', `from=${yesterday}&to=${yesterday}`, 200, { 'if-none-match': '"other"' })
  })

  test('JSON and CSV are separate representations, chosen by format or else by Accept', async () => {
    const qs = `from=${addDays(today, -2)}&to=${today}`
    const json = await report(app, owner, 'spend', qs)
    const csv = await report<string>(app, owner, 'spend', `${qs}&format=csv`)
    expect(csv.res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(csv.res.headers.get('etag')).not.toBe(json.res.headers.get('etag'))
    expect(csv.res.headers.get('cache-control')).toBe('private, max-age=60')
    const byAccept = await report<string>(app, owner, 'spend', qs, 200, { accept: 'text/csv' })
    expect(byAccept.text).toBe(csv.text)
    for (const accept of ['application/json', '*/*', 'text/csv;q=0.5, application/json', 'text/html'])
      expect((await report(app, owner, 'spend', qs, 200, { accept })).res.headers.get('content-type')).toStartWith('application/json')
    expect((await report(app, owner, 'spend', qs, 200, { accept: 'application/json;q=0.2, text/csv' })).res.headers.get('content-type')).toStartWith('text/csv')
    expect((await report(app, owner, 'spend', `${qs}&format=json`, 200, { accept: 'text/csv' })).res.headers.get('content-type')).toStartWith(
      'application/json',
    )
  })

  test('an answer never crosses tenants, nor members whose days are in other zones', async () => {
    const qs = `from=${addDays(today, -2)}&to=${today}`
    const mine = (await report(app, owner, 'spend', qs)).body
    expect(micros(mine.total.charges_usd)).toBeGreaterThan(0)
    const stranger = await payer(app, 'starter', 'reports-stranger')
    const theirs = (await report(app, stranger, 'spend', qs)).body
    expect(theirs.total.charges_usd).toBe('0.00')
    const abroad = await addMember(app, owner.tenantId, 'viewer')
    await setZone(app, abroad, 'Pacific/Auckland')
    const local = (await report(app, abroad, 'spend', qs)).body
    expect(local.timezone).toBe('Pacific/Auckland')
    expect(local.from_at).not.toBe(mine.from_at)
  })

  test('reading a report writes no audit row', async () => {
    const before = (await auditRows(app, owner)).length
    for (const name of ['utilisation', 'earnings', 'spend', 'margin']) await report(app, owner, name, 'group_by=week')
    expect((await auditRows(app, owner)).length).toBe(before)
  })
})

describe('the range', () => {
  test('defaults to the last 7 days, today included; 366 days is the most', async () => {
    const { body } = await report(app, owner, 'earnings')
    expect({ from: body.from, to: body.to, days: body.days, group_by: body.group_by }).toEqual({
      from: addDays(today, -6),
      to: today,
      days: 7,
      group_by: 'day',
    })
    expect((await report(app, owner, 'earnings', `from=${addDays(today, -365)}&to=${today}&group_by=month`)).body.days).toBe(366)
    const onlyFrom = (await report(app, owner, 'earnings', `from=${addDays(today, -2)}`)).body
    expect({ from: onlyFrom.from, to: onlyFrom.to }).toEqual({ from: addDays(today, -2), to: today })
    const onlyTo = (await report(app, owner, 'earnings', `to=${addDays(today, -10)}`)).body
    expect({ from: onlyTo.from, to: onlyTo.to }).toEqual({ from: addDays(today, -16), to: addDays(today, -10) })
  })

  test('a range the rules refuse answers 422 with a pointer to the parameter', async () => {
    const cases: [string, string, string][] = [
      [`from=${today}&to=${addDays(today, -1)}`, '/from', 'after_to'],
      [`from=${addDays(today, 1)}`, '/from', 'after_to'],
      [`from=${addDays(today, -366)}&to=${today}`, '/from', 'range_too_large'],
      ['from=2026-02-30', '/from', 'format'],
      ['to=2026-13-01', '/to', 'format'],
      ['from=yesterday', '/from', 'format'],
      ['from=1999-12-31&to=2000-01-01', '/from', 'too_small'],
      ['group_by=year', '/group_by', 'invalid_value'],
      ['format=xml', '/format', 'invalid_value'],
    ]
    for (const [qs, path, code] of cases) {
      const res = await app.fetch(`/api/v1/reports/earnings?${qs}`, { headers: { cookie: `__Host-gpuhq_session=${owner.session}` } })
      const problem = await expectProblem(res, 422, 'validation_failed')
      expect({ qs, errors: problem.errors }).toEqual({ qs, errors: [{ path, code }] })
    }
  })

  test('an unknown report is an unknown route: 404 not_found', async () => {
    const res = await app.fetch('/api/v1/reports/profit', { headers: { cookie: `__Host-gpuhq_session=${owner.session}` } })
    await expectProblem(res, 404, 'not_found')
  })
})

describe('the margin report', () => {
  type Figures = { earned_usd: string; gpuhq_charges_usd: string; margin_usd: string; estimate: boolean; missing: string[] }
  type Margin = Figures & {
    days: number
    from_day: string
    to_day: string
    from: string
    to: string
    fleet: Figures
    servers: (Figures & { server_id: string })[]
    periods: (Figures & { period: string })[]
  }

  test('?days keeps its meaning, the last UTC days with today, and now carries its range and periods', async () => {
    const { body } = await report<Margin>(app, owner, 'margin', 'days=3')
    expect({ days: body.days, from_day: body.from_day, to_day: body.to_day, from: body.from, to: body.to }).toEqual({
      days: 3,
      from_day: addDays(today, -2),
      to_day: today,
      from: addDays(today, -2),
      to: today,
    })
    expect(body.servers).toHaveLength(3)
    expect(body.periods.map((p) => p.period)).toEqual([addDays(today, -2), addDays(today, -1), today])
    // Earned and gpuhq's charges add up across the periods to the micro-dollar.
    expect(body.periods.reduce((n, p) => n + micros(p.gpuhq_charges_usd), 0)).toBe(micros(body.fleet.gpuhq_charges_usd))
    expect(body.periods.reduce((n, p) => n + micros(p.earned_usd), 0)).toBe(micros(body.fleet.earned_usd))
    const same = (await report<Margin>(app, owner, 'margin', `from=${addDays(today, -2)}&to=${today}`)).body
    expect(same.fleet).toEqual(body.fleet)
  })

  test("gpuhq's charges in the margin are the ledger's, as the spend report of the same UTC days counts them", async () => {
    const from = addDays(today, -2)
    const margin = (await report<Margin>(app, owner, 'margin', `from=${from}&to=${today}`)).body
    const spend = (await report(app, owner, 'spend', `from=${from}&to=${today}`)).body
    expect(spend.timezone).toBe('UTC')
    expect(micros(margin.fleet.gpuhq_charges_usd)).toBe(micros(spend.total.charges_usd))
    for (const s of margin.servers)
      expect(micros(s.gpuhq_charges_usd)).toBe(micros(spend.servers.find((x: { server_id: string }) => x.server_id === s.server_id).charges_usd))
  })

  test('as CSV, one row per period and server; days cannot be combined with from or to', async () => {
    const { text } = await report<string>(app, owner, 'margin', 'days=2&format=csv')
    const rows = csvRecords(text)
    expect(text.split('\r\n')[0]).toBe(
      'period,period_from,period_to,server_id,server_name,gpu_model,earned_usd,platform_cut_usd,electricity_usd,gpuhq_charges_usd,margin_usd,estimate,missing',
    )
    expect(rows).toHaveLength(2 * 3)
    expect(rows.every((r) => r.estimate === 'true' && r.missing.includes('electricity tariff'))).toBe(true)
    const res = await app.fetch(`/api/v1/reports/margin?days=2&from=${today}`, { headers: { cookie: `__Host-gpuhq_session=${owner.session}` } })
    expect((await expectProblem(res, 422, 'validation_failed')).errors).toEqual([{ path: '/days', code: 'exclusive_with_from_to' }])
    const tooMany = await app.fetch('/api/v1/reports/margin?days=91', { headers: { cookie: `__Host-gpuhq_session=${owner.session}` } })
    expect((await expectProblem(tooMany, 422, 'validation_failed')).errors).toEqual([{ path: '/days', code: 'too_large' }])
  })

  test('is money of every server: a token limited to some servers is refused it, a token without billing:read too', async () => {
    const [rig] = ((await app.deps.db.all(sql`SELECT id FROM servers WHERE tenant_id = ${owner.tenantId}`)) as { id: string }[]).map((r) => r.id)
    const limited = (await mintPat(app, owner, { scopes: ['billing:read'], server_allowlist: [rig] })).token
    await report(app, limited, 'margin', '', 403)
    const fleetOnly = (await mintPat(app, owner, { scopes: ['servers:read', 'marketplaces:read'] })).token
    await report(app, fleetOnly, 'margin', '', 403)
    await report(app, fleetOnly, 'utilisation')
    await report(app, fleetOnly, 'earnings')
    const stranger = await newTenant(app, 'reports-margin-stranger')
    expect((await report<Margin>(app, stranger, 'margin', 'days=3')).body.servers).toEqual([])
  })
})
