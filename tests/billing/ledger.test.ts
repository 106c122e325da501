import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { Member } from '../support/access'
import { call } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import {
  addServers,
  adjust,
  clockTo,
  getJson,
  iso,
  ledgerAll,
  micros,
  payer,
  runCharges,
  topUp,
  US_PER_HOUR,
  US_PER_MINUTE,
  usOf,
  utcUs,
  type LedgerItem,
} from '../support/billing'
import { expectProblem } from '../support/problem'

/**
 * The ledger: append-only in the database itself, and GET /billing/ledger with its filters and
 * pagination. One tenant's history, built once:
 *   00:35 adjustment +10.00, top-up +25.00 · charges for 00:00 and 01:00 (booked at 02:30)
 *   02:31 adjustment −1.50 · 02:32 top-up reversal −5.00
 */
let app: TestApp
let owner: Member
let other: Member
const DAY = utcUs(2027, 3, 10)
const at = (h: number, m = 0) => DAY + h * US_PER_HOUR + m * US_PER_MINUTE

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await clockTo(app, at(0, 20))
  owner = await payer(app, 'starter', 'ledger')
  other = await payer(app, 'starter', 'other')
  await addServers(app, owner.tenantId, 2)
  await addServers(app, other.tenantId, 1)
  await clockTo(app, at(0, 35))
  await adjust(app, owner.tenantId, '10.00', 'goodwill credit')
  await topUp(app, owner.tenantId, 25_000_000)
  await clockTo(app, at(2, 30))
  await runCharges(app)
  await clockTo(app, at(2, 31))
  await adjust(app, owner.tenantId, '-1.50', 'manual debit')
  await clockTo(app, at(2, 32))
  await topUp(app, owner.tenantId, -5_000_000)
})
afterAll(() => app.close())

const page = (q: Record<string, string>, who: Member = owner) =>
  getJson<{ items: LedgerItem[]; next_cursor: string | null }>(app, who, `/billing/ledger?${new URLSearchParams(q)}`)

describe('the ledger is append-only', () => {
  test('the database refuses to UPDATE or DELETE a ledger row, and the row stays as it was', async () => {
    const [row] = await ledgerAll(app, owner, { kind: 'adjustment' })
    await expect(app.deps.db.run(sql`UPDATE ledger_entries SET amount_micros = 0 WHERE id = ${row!.id}`).execute()).rejects.toThrow(/append-only/)
    await expect(app.deps.db.run(sql`UPDATE ledger_entries SET detail = ${'x'} WHERE tenant_id = ${owner.tenantId}`).execute()).rejects.toThrow(/append-only/)
    await expect(app.deps.db.run(sql`DELETE FROM ledger_entries WHERE id = ${row!.id}`).execute()).rejects.toThrow(/append-only/)
    await expect(app.deps.db.run(sql`DELETE FROM ledger_entries`).execute()).rejects.toThrow(/append-only/)
    const [again] = await ledgerAll(app, owner, { kind: 'adjustment' })
    expect(again).toEqual(row!)
  })
})

describe('GET /billing/ledger', () => {
  test('rows come newest first by occurred_at: a charge booked later sits at the start of its hour', async () => {
    const rows = await ledgerAll(app, owner)
    expect(rows.map((r) => [r.kind, r.amount_usd, r.occurred_at])).toEqual([
      ['topup', '-5.00', expect.stringMatching(/^2027-03-10T02:32:00\.\d{6}Z$/)],
      ['adjustment', '-1.50', expect.stringMatching(/^2027-03-10T02:31:00\.\d{6}Z$/)],
      ['charge', '-0.005376', iso(at(1))],
      ['topup', '25.00', expect.stringMatching(/^2027-03-10T00:35:00\.\d{6}Z$/)],
      ['adjustment', '10.00', expect.stringMatching(/^2027-03-10T00:35:00\.\d{6}Z$/)],
      ['charge', '-0.005376', iso(at(0))],
    ])
    for (let i = 1; i < rows.length; i++) expect(usOf(rows[i - 1]!.occurred_at)).toBeGreaterThanOrEqual(usOf(rows[i]!.occurred_at))
    // Non-charge rows carry no charge hour or day and no calculation.
    for (const r of rows.filter((r) => r.kind !== 'charge')) expect([r.charge_day, r.charge_hour, r.calculation_id]).toEqual([null, null, null])
    expect(rows.find((r) => r.kind === 'adjustment' && r.amount_usd === '10.00')!.detail).toContain('goodwill credit')
  })

  test('kind filters to one kind of row', async () => {
    expect((await ledgerAll(app, owner, { kind: 'charge' })).map((r) => r.kind)).toEqual(['charge', 'charge'])
    expect((await ledgerAll(app, owner, { kind: 'topup' })).map((r) => r.amount_usd)).toEqual(['-5.00', '25.00'])
    expect((await ledgerAll(app, owner, { kind: 'adjustment' })).map((r) => r.amount_usd)).toEqual(['-1.50', '10.00'])
    await expectProblem(await call(app, 'GET', '/billing/ledger?kind=refund', owner), 422, 'validation_failed')
  })

  test('from/to is half-open on occurred_at: a row exactly at from is in, a row exactly at to is out', async () => {
    const rows = await ledgerAll(app, owner, { from: iso(at(0)), to: iso(at(1)) })
    expect(rows.map((r) => r.kind)).toEqual(['topup', 'adjustment', 'charge'])
    expect(rows.at(-1)!.occurred_at).toBe(iso(at(0)))
    expect((await ledgerAll(app, owner, { from: iso(at(1)) })).map((r) => r.kind)).toEqual(['topup', 'adjustment', 'charge'])
    expect(await ledgerAll(app, owner, { to: iso(at(0)) })).toEqual([])
    expect((await ledgerAll(app, owner, { from: iso(at(1)), to: iso(at(1) + 1) })).map((r) => r.occurred_at)).toEqual([iso(at(1))])
  })

  test('range cannot be combined with from or to (422), and malformed instants are refused', async () => {
    for (const q of [`range=today&from=${iso(at(0))}`, `range=month&to=${iso(at(3))}`, `range=7d&from=${iso(at(0))}&to=${iso(at(3))}`]) {
      const p = await expectProblem(await call(app, 'GET', `/billing/ledger?${q}`, owner), 422, 'validation_failed')
      expect(p.errors?.[0]?.path).toBe('/range')
    }
    await expectProblem(await call(app, 'GET', '/billing/ledger?range=week', owner), 422, 'validation_failed')
    const bad = await expectProblem(await call(app, 'GET', '/billing/ledger?from=yesterday', owner), 422, 'validation_failed')
    expect(bad.errors?.[0]?.path).toBe('/from')
  })

  test("another tenant's rows never show, and without a session the ledger answers 401", async () => {
    const mine = new Set((await ledgerAll(app, owner)).map((r) => r.id))
    const theirs = await ledgerAll(app, other)
    expect(theirs.map((r) => r.kind)).toEqual(['charge', 'charge'])
    for (const r of theirs) {
      expect(mine.has(r.id)).toBe(false)
      expect(r.tenant_id).toBe(other.tenantId)
    }
    await expectProblem(await call(app, 'GET', '/billing/ledger', null), 401, 'unauthorized')
  })
})

describe('cursor pagination', () => {
  test('pages of any size put together are the whole list, each row once, in the same order', async () => {
    const all = await ledgerAll(app, owner)
    for (const limit of [1, 2, 4, 5]) expect((await ledgerAll(app, owner, {}, limit)).map((r) => r.id)).toEqual(all.map((r) => r.id))
    const first = await page({ limit: '6' })
    expect(first.next_cursor).toBeNull()
  })

  test('rows with the same occurred_at are split across pages without loss or repeat', async () => {
    const t = await payer(app, 'free', 'ties')
    const moment = app.deps.clock.nowUs() - US_PER_HOUR
    for (let i = 0; i < 5; i++) await topUp(app, t.tenantId, (i + 1) * 1_000_000, moment)
    const paged = await ledgerAll(app, t, {}, 2)
    expect(paged.map((r) => r.amount_usd).sort()).toEqual(['1.00', '2.00', '3.00', '4.00', '5.00'])
    expect(paged.map((r) => r.id)).toEqual((await ledgerAll(app, t)).map((r) => r.id))
  })

  test('a row booked between two page reads neither shifts nor repeats the later pages', async () => {
    const t = await payer(app, 'free', 'moving')
    for (let i = 0; i < 4; i++) {
      await clockTo(app, app.deps.clock.nowUs() + 60 * 1_000_000)
      await adjust(app, t.tenantId, `${i + 1}.00`)
    }
    const p1 = await page({ limit: '2' }, t)
    expect(p1.items.map((r) => r.amount_usd)).toEqual(['4.00', '3.00'])
    await adjust(app, t.tenantId, '9.00') // newest: belongs before page one, not on page two
    const p2 = await page({ limit: '2', cursor: p1.next_cursor! }, t)
    expect(p2.items.map((r) => r.amount_usd)).toEqual(['2.00', '1.00'])
    expect(p2.next_cursor).toBeNull()
    expect(micros((await ledgerAll(app, t))[0]!.amount_usd)).toBe(9_000_000)
  })

  test('a cursor only works for the list and filters it came from; an edited one is refused', async () => {
    const p1 = await page({ limit: '1', kind: 'topup' })
    const queries: Record<string, string>[] = [
      { limit: '1', kind: 'adjustment', cursor: p1.next_cursor! },
      { limit: '1', cursor: p1.next_cursor! },
      { limit: '1', kind: 'topup', cursor: p1.next_cursor!.slice(0, -1) + (p1.next_cursor!.endsWith('A') ? 'B' : 'A') },
    ]
    for (const q of queries) {
      const p = await expectProblem(await call(app, 'GET', `/billing/ledger?${new URLSearchParams(q)}`, owner), 422, 'validation_failed')
      expect(p.errors?.[0]?.path).toBe('/cursor')
    }
    await expectProblem(await call(app, 'GET', `/billing/ledger?limit=1&kind=topup&cursor=${p1.next_cursor}`, other), 422, 'validation_failed')
  })
})
