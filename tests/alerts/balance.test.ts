import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { addServers, adjust, advanceBy, clockTo, payer, runCharges, utcUs } from '../support/billing'
import { createTopup, sandboxPay } from '../support/payments'
import { alerts, evaluate, NOTHING_CHANGED } from './support'

/**
 * Issue 21, the `low_balance` cause from real hourly charges (billing.charge over a moving test
 * clock): a charge leaving under three days of balance opens a warning linked to the balance
 * notification; later charges are repeats; grace makes the same incident critical; a credited
 * top-up that covers three days again resolves it in its own transaction, and an operator's credit
 * at the next alerts.evaluate. Pro costs 4 USD per server and month: 10 servers spend about 1.3 USD a
 * day, so 2 USD lasts about a day and a half.
 */

let app: TestApp
let owner: Member

const lowOf = (m: Member) => alerts(app, m, { kind: 'low_balance' })

beforeAll(async () => {
  app = await startTestApp()
  // A fixed start, so the hours these tests move through never cross midnight where a test reads
  // "the day's one warning" (the balance notification is once per UTC day), whatever the real time.
  await clockTo(app, utcUs(2027, 3, 1, 12, 0))
  owner = await payer(app, 'pro', 'alerts-low')
  await addServers(app, owner.tenantId, 10)
  await adjust(app, owner.tenantId, '2.00')
})
afterAll(() => app.close())

describe('a low balance', () => {
  test('a charge leaving under three days opens one warning for the account, linked to the balance notification; later charges are repeats', async () => {
    await advanceBy(app, 3 * 3600)
    await runCharges(app)
    const [first] = await lowOf(owner)
    expect(first).toMatchObject({ cause_key: 'low_balance', severity: 'warning', state: 'open', server_id: null, marketplace: null })
    expect(first!.title).toMatch(/^Balance low: about \d+ hours left$/)
    expect(first!.notifications.map((n) => [n.category, n.title])).toEqual([['balance', expect.stringMatching(/^Balance low/)]])
    await advanceBy(app, 3600)
    await runCharges(app)
    const list = await lowOf(owner)
    expect(list.map((i) => [i.id, i.occurrences])).toEqual([[first!.id, first!.occurrences + 1]])
    // Still covered by the day's one warning.
    expect(list[0]!.notifications).toEqual(first!.notifications)
    expect(await evaluate(app)).toBe(NOTHING_CHANGED)
  })

  test('the balance running out starts grace, which makes the same incident critical', async () => {
    await advanceBy(app, 48 * 3600)
    await runCharges(app)
    const list = await lowOf(owner)
    expect(list).toHaveLength(1)
    expect(list[0]).toMatchObject({ severity: 'critical', state: 'open', title: 'Balance below zero: grace started' })
    expect(list[0]!.notifications.map((n) => n.title)).toContain('Balance below zero: grace started')
  })

  test('a credited top-up that covers three days again resolves it at once', async () => {
    const t = await createTopup(app, owner, '20.00', 'card')
    await sandboxPay(app, t, 'finished')
    const [i] = await lowOf(owner)
    expect(i).toMatchObject({ state: 'resolved', resolved_by: null })
    expect(i!.resolution).toMatch(/^the balance of \d+\.\d+ USD lasts about \d+\.\d days again$/)
  })

  test("an operator's credit resolves it at the next evaluation, and evaluating again changes nothing", async () => {
    const other = await payer(app, 'pro', 'alerts-low-b')
    await addServers(app, other.tenantId, 10)
    await adjust(app, other.tenantId, '2.00')
    await advanceBy(app, 3 * 3600)
    await runCharges(app)
    expect((await lowOf(other)).map((i) => i.state)).toEqual(['open'])
    await adjust(app, other.tenantId, '20.00')
    expect(await evaluate(app)).toBe('0 incidents opened, 0 repeats counted, 1 resolved, 0 linked to new notifications')
    expect((await lowOf(other)).map((i) => i.state)).toEqual(['resolved'])
    expect(await evaluate(app)).toBe(NOTHING_CHANGED)
    // The first tenant's incidents are not the second's.
    expect((await lowOf(owner)).map((i) => i.state)).toEqual(['resolved'])
  })
})
