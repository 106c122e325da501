import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { addServers, adjust, advanceBy, clockTo, payer, runCharges, utcUs } from '../support/billing'

/**
 * Issue 19, the `balance` producers from real charges: an hourly charge that leaves less than three
 * days of balance at the current rate warns once a day; the balance going below zero starts grace,
 * which notifies too. Charged by the billing.charge job over a moving test clock.
 */

let app: TestApp
let owner: Member
beforeAll(async () => {
  app = await startTestApp()
  // A fixed start, so the hours charged never cross midnight (the warning is once per UTC day).
  await clockTo(app, utcUs(2027, 3, 1, 12, 0))
  owner = await payer(app, 'pro', 'low-balance')
  // Pro is 4 USD per server per month: 10 servers cost about 1.33 USD a day, so 2 USD lasts 1.5 days.
  await addServers(app, owner.tenantId, 10)
  await adjust(app, owner.tenantId, '2.00')
})
afterAll(() => app.close())

type Item = { category: string; title: string; body: string; critical: boolean }
const balance = async () =>
  ((await (await call(app, 'GET', '/notifications/history?limit=100', owner)).json()) as { items: Item[] }).items.filter((i) => i.category === 'balance')

describe('balance notifications', () => {
  test('a charge leaving under three days of balance warns, once a day however many hours are charged', async () => {
    await advanceBy(app, 3 * 3600)
    await runCharges(app)
    const warnings = (await balance()).filter((i) => i.title.startsWith('Balance low'))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]!.critical).toBe(true)
    expect(warnings[0]!.body).toMatch(/lasts about 1\.\d days/)
  })

  test('running out starts grace, which notifies too', async () => {
    await advanceBy(app, 48 * 3600)
    await runCharges(app)
    const titles = (await balance()).map((i) => i.title)
    expect(titles).toContain('Balance below zero: grace started')
  })
})
