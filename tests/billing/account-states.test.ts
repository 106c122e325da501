import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { auditRows, call, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { addServers, adjust, advanceBy, clockTo, getBilling, getJson, payer, runCharges, topUp, US_PER_HOUR, usOf, utcUs } from '../support/billing'
import { expectProblem } from '../support/problem'

/**
 * Account states: a balance below zero starts grace; grace longer than GRACE_PERIOD_HOURS (2 here)
 * freezes the account at the next billing.charge run; frozen accounts are refused fleet-changing
 * operations (POST /tokens/init) with account_frozen; a top-up that brings the balance above zero
 * is the only way out of a freeze; out of grace, an adjustment back above zero is enough.
 */
let app: TestApp
const GRACE_HOURS = 2
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent', GRACE_PERIOD_HOURS: String(GRACE_HOURS) })
  await clockTo(app, utcUs(2027, 8, 2, 9, 30))
})
afterAll(() => app.close())

const state = async (m: Member) => (await getBilling(app, m)).account_state
const mintInit = (m: Member) => call(app, 'POST', '/tokens/init', m, { json: {} })
/** The system's account.* audit rows of the tenant, oldest first. */
async function transitions(m: Member): Promise<string[]> {
  const rows = await auditRows(app, m, { actor_kind: 'system' })
  return rows
    .filter((r) => r.operation.startsWith('account.'))
    .reverse()
    .map((r) => r.operation)
}
async function inGrace(tag: string): Promise<Member> {
  const m = await payer(app, 'starter', tag)
  await adjust(app, m.tenantId, '-1.00', 'debit into grace')
  expect(await state(m)).toBe('grace')
  return m
}
async function frozen(tag: string): Promise<Member> {
  const m = await inGrace(tag)
  await advanceBy(app, GRACE_HOURS * 3600 + 60)
  await runCharges(app)
  expect(await state(m)).toBe('frozen')
  return m
}

describe('into grace and into frozen', () => {
  test('the hourly charge that takes the balance below zero puts the account in grace, and the system audits it', async () => {
    const m = await payer(app, 'starter', 'grace')
    await addServers(app, m.tenantId, 2)
    expect(await state(m)).toBe('active')
    await advanceBy(app, 2 * 3600)
    await runCharges(app)
    const b = await getBilling(app, m)
    expect(b.balance_usd.startsWith('-')).toBe(true)
    expect(b.account_state).toBe('grace')
    expect(usOf(b.grace_ends_at!) - usOf(b.grace_since!)).toBe(GRACE_HOURS * US_PER_HOUR)
    expect(b.frozen_at).toBeNull()
    expect((await getJson(app, m, '/plans/current')).account_state).toBe('grace')
    const audit = (await auditRows(app, m, { operation: 'account.grace' }))[0]!
    expect(audit.actor.kind).toBe('system')
    expect(audit).toMatchObject({ operation: 'account.grace', outcome: 'succeeded', target: { kind: 'tenant', id: m.tenantId } })
    // Grace alone does not stop the fleet from growing.
    expect((await mintInit(m)).status).toBe(201)
  })

  test('grace still inside the period does not freeze; past it, the next billing.charge run freezes and POST /tokens/init answers 403 account_frozen', async () => {
    const m = await inGrace('freeze')
    await advanceBy(app, GRACE_HOURS * 3600 - 120)
    await runCharges(app)
    expect(await state(m)).toBe('grace')
    await advanceBy(app, 240)
    expect(await state(m)).toBe('grace') // freezing happens in the job, not on reading
    await runCharges(app)
    const b = await getBilling(app, m)
    expect(b.account_state).toBe('frozen')
    expect(b.frozen_at).not.toBeNull()
    await expectProblem(await mintInit(m), 403, 'account_frozen')
    expect(await transitions(m)).toEqual(['account.grace', 'account.frozen'])
    // Reading stays allowed while frozen.
    expect((await call(app, 'GET', '/billing/ledger', m)).status).toBe(200)
  })
})

describe('out of grace and out of a freeze', () => {
  test('an adjustment that brings the balance above zero ends grace', async () => {
    const m = await inGrace('rescued')
    await adjust(app, m.tenantId, '3.00', 'goodwill')
    const b = await getBilling(app, m)
    expect(b).toMatchObject({ account_state: 'active', balance_usd: '2.00', grace_since: null, grace_ends_at: null })
    expect(await transitions(m)).toEqual(['account.grace', 'account.active'])
    // and the old grace no longer counts: a later run does not freeze
    await advanceBy(app, GRACE_HOURS * 3600 + 60)
    await runCharges(app)
    expect(await state(m)).toBe('active')
  })

  test('an adjustment does not unfreeze a frozen account, even above zero; a top-up above zero does', async () => {
    const m = await frozen('thaw')
    await adjust(app, m.tenantId, '10.00', 'operator credit')
    const still = await getBilling(app, m)
    expect(still).toMatchObject({ account_state: 'frozen', balance_usd: '9.00' })
    await expectProblem(await mintInit(m), 403, 'account_frozen')

    await topUp(app, m.tenantId, 500_000)
    const b = await getBilling(app, m)
    expect(b).toMatchObject({ account_state: 'active', balance_usd: '9.50', frozen_at: null, grace_since: null })
    expect((await mintInit(m)).status).toBe(201)
    expect(await transitions(m)).toEqual(['account.grace', 'account.frozen', 'account.unfrozen'])
  })

  test('a top-up that leaves the balance at zero or below keeps the account frozen; the one that lifts it above zero unfreezes', async () => {
    const m = await frozen('short')
    await topUp(app, m.tenantId, 400_000) // −1.00 + 0.40 = −0.60
    expect(await state(m)).toBe('frozen')
    await topUp(app, m.tenantId, 600_000) // exactly 0.00: not above zero
    expect((await getBilling(app, m)).balance_usd).toBe('0.00')
    expect(await state(m)).toBe('frozen')
    await topUp(app, m.tenantId, 1) // 0.000001
    expect(await state(m)).toBe('active')
  })

  test('a top-up reversal (negative top-up) can put an account back into grace', async () => {
    const m = await payer(app, 'starter', 'reversal')
    await topUp(app, m.tenantId, 5_000_000)
    await topUp(app, m.tenantId, -6_000_000)
    const b = await getBilling(app, m)
    expect(b).toMatchObject({ account_state: 'grace', balance_usd: '-1.00' })
    expect(await transitions(m)).toEqual(['account.grace'])
  })

  test('every transition is an audit row of the system with a detail naming the balance or the period', async () => {
    const m = await frozen('audited')
    await topUp(app, m.tenantId, 2_000_000)
    const rows = (await auditRows(app, m, { actor_kind: 'system' })).filter((r) => r.operation.startsWith('account.')).reverse()
    expect(rows.map((r) => [r.operation, r.actor.kind, r.actor.id])).toEqual([
      ['account.grace', 'system', null],
      ['account.frozen', 'system', null],
      ['account.unfrozen', 'system', null],
    ])
    const details = rows.map((r) => (r as unknown as { detail: string }).detail)
    expect(details[0]).toContain('-1.00')
    expect(details[1]).toContain(`${GRACE_HOURS} h`)
    expect(details[2]).toContain('1.00')
  })
})
