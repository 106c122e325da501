import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { join } from 'node:path'
import { call, newTenant } from '../support/access'
import { startTestApp, TEST_SECRET_KEY } from '../support/app'
import { expectProblem } from '../support/problem'
import {
  balanceMicros,
  checkoutPath,
  createTopup,
  getTopup,
  ipn,
  notificationsOf,
  npTopup,
  sandboxPay,
  startPaymentsApp,
  topupEntries,
  type PaymentsApp,
} from '../support/payments'
import { loadConfig } from '../../src/config'
import { sandboxSignature } from '../../src/modules/payments/sandbox.provider'
import { listUnsettledPayments, settleUnsettledPayment } from '../../src/modules/payments'

/**
 * Issue 13 finding 1 and docs/payments.md "Exactly-once crediting": a top-up is credited at most
 * once, whatever arrives in whatever order or concurrency. The sandbox behaves like a real
 * provider: an invoice paid by a finished outcome refuses every further outcome (409) and the
 * sandbox never confirms more than was invoiced. A further finished payment (a real provider can
 * send one) is recorded, credits nothing, and is listed for the operator, who settles it.
 */

let app: PaymentsApp
beforeAll(async () => {
  app = await startPaymentsApp('sandbox,nowpayments')
})
afterAll(() => app.stop())

const press = (path: string, outcome: string, amount?: string) =>
  app.fetch(path, { method: 'POST', json: { outcome, ...(amount === undefined ? {} : { amount_usd: amount }) } })

describe('the sandbox checkout, like a real provider', () => {
  test('100 concurrent "finished" presses on one invoice: one is accepted, 99 answer 409, and the top-up is credited once', async () => {
    const m = await newTenant(app, 'hundred')
    const t = await createTopup(app, m, '25.00', 'card')
    const path = checkoutPath(t)
    const answers = await Promise.all(Array.from({ length: 100 }, () => press(path, 'finished')))
    const statuses = answers.map((r) => r.status)
    expect(statuses.filter((s) => s === 200)).toHaveLength(1)
    expect(statuses.filter((s) => s === 409)).toHaveLength(99)
    for (const r of answers) await r.text()
    expect(await topupEntries(app, m.tenantId)).toHaveLength(1)
    expect(await balanceMicros(app, m)).toBe(25_000_000)
    expect(await getTopup(app, m, t.id)).toMatchObject({ status: 'succeeded', credited_usd: '25.00' })
  })

  test('a second outcome after "finished" answers 409 conflict, sends nothing and credits nothing', async () => {
    const m = await newTenant(app, 'second')
    const t = await createTopup(app, m, '12.50', 'card')
    await sandboxPay(app, t, 'finished')
    for (const outcome of ['finished', 'partially_paid', 'expired', 'unknown']) await expectProblem(await press(checkoutPath(t), outcome), 409, 'conflict')
    expect(await notificationsOf(app, t.id)).toHaveLength(1)
    expect(await balanceMicros(app, m)).toBe(12_500_000)
    expect(await getTopup(app, m, t.id)).toMatchObject({ status: 'succeeded', credited_usd: '12.50' })
  })

  test('an amount above the invoice (or not above zero) is refused with 422 at /amount_usd; nothing is recorded or credited', async () => {
    const m = await newTenant(app, 'over')
    const t = await createTopup(app, m, '12.50', 'card')
    for (const amount of ['12.500001', '15.00', '2500.00', '0.00', '-1.00']) {
      const p = await expectProblem(await press(checkoutPath(t), 'finished', amount), 422, 'validation_failed')
      expect(p.errors?.[0]?.path).toBe('/amount_usd')
    }
    expect(await notificationsOf(app, t.id)).toEqual([])
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM sandbox_payments WHERE invoice_id = ${t.invoice_id!}`)).toEqual({ n: 0 })
    expect(await balanceMicros(app, m)).toBe(0)
    // The invoice is still open: the exact amount is then accepted once.
    expect((await sandboxPay(app, t, 'finished', '12.50')).notification_status).toBe(200)
    expect(await balanceMicros(app, m)).toBe(12_500_000)
  })
})

describe('one credit per top-up, whatever the provider sends', () => {
  test('100 different finished payments for one top-up delivered concurrently: exactly one credit, 99 listed for the operator', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const payments = Array.from({ length: 100 }, () => app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25 }))
    const answers = await Promise.all(payments.map((p) => ipn(app, p.payment_id)))
    expect(answers.map((a) => a.status)).toEqual(Array(100).fill(200))
    expect(await topupEntries(app, owner.tenantId)).toHaveLength(1)
    expect(await balanceMicros(app, owner)).toBe(25_000_000)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '25.00' })
    const open = (await listUnsettledPayments({ deps: app.deps })).filter((u) => u.topupId === topup.id)
    expect(open).toHaveLength(99)
    expect(new Set(open.map((u) => u.paymentId)).size).toBe(99)
    expect(open.every((u) => u.reason === 'topup_already_credited' && u.amountMicros === 25_000_000 && u.settledAt === null)).toBe(true)
    // Delivering them all again records nothing new and credits nothing.
    await Promise.all(payments.map((p) => ipn(app, p.payment_id)))
    expect((await listUnsettledPayments({ deps: app.deps })).filter((u) => u.topupId === topup.id)).toHaveLength(99)
    expect(await topupEntries(app, owner.tenantId)).toHaveLength(1)
  })

  test('the database itself refuses a second positive credit for the same top-up, even inserted directly', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25 })
    await ipn(app, p.payment_id)
    const last = (await app.deps.db.get(sql`SELECT max(seq) AS seq, max(created_at) AS at FROM ledger_entries WHERE tenant_id = ${owner.tenantId}`)) as {
      seq: number
      at: number
    }
    await expect(
      app.deps.db
        .run(
          sql`INSERT INTO ledger_entries (id, tenant_id, seq, kind, amount_micros, balance_after_micros, occurred_at, detail, payment_ref, topup_id, created_at) VALUES (${app.deps.newId()}, ${owner.tenantId}, ${last.seq + 1}, 'topup', ${25_000_000}, ${50_000_000}, ${last.at}, ${'a second credit'}, ${'nowpayments:other-payment'}, ${topup.id}, ${last.at})`,
        )
        .execute(),
    ).rejects.toThrow(/UNIQUE constraint failed: ledger_entries\.topup_id/)
  })

  test('the operator settles an unsettled payment by an adjustment, once; or records it as refunded', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const first = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25 })
    const twice = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 20 })
    const third = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 5 })
    await ipn(app, first.payment_id)
    await ipn(app, twice.payment_id)
    await ipn(app, third.payment_id)
    const [a, b] = (await listUnsettledPayments({ deps: app.deps })).filter((u) => u.topupId === topup.id)
    expect([a!.paymentId, b!.paymentId]).toEqual([String(twice.payment_id), String(third.payment_id)])

    const credited = await settleUnsettledPayment({ deps: app.deps, input: { id: a!.id, settlement: 'credited', reason: 'paid twice; kept as balance' } })
    expect(credited.settlementEntryId).not.toBeNull()
    expect(await balanceMicros(app, owner)).toBe(45_000_000)
    const adj = await app.deps.db.get(sql`SELECT kind, amount_micros FROM ledger_entries WHERE id = ${credited.settlementEntryId!}`)
    expect(adj).toEqual({ kind: 'adjustment', amount_micros: 20_000_000 })
    await expect(settleUnsettledPayment({ deps: app.deps, input: { id: a!.id, settlement: 'credited', reason: 'again' } })).rejects.toThrow(/already settled/)

    await settleUnsettledPayment({ deps: app.deps, input: { id: b!.id, settlement: 'refunded', reason: 'refunded at NOWPayments' } })
    expect(await balanceMicros(app, owner)).toBe(45_000_000)
    expect((await listUnsettledPayments({ deps: app.deps })).filter((u) => u.topupId === topup.id)).toEqual([])
    expect((await listUnsettledPayments({ deps: app.deps, all: true })).filter((u) => u.topupId === topup.id).map((u) => u.settlement)).toEqual([
      'credited',
      'refunded',
    ])
  })

  test("a finished payment for a top-up in review credits nothing and is on the operator's list too", async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    await ipn(app, app.np.pay(topup.invoice_id!, { status: 'wrong_asset_confirmed' }).payment_id)
    const p = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25 })
    await ipn(app, p.payment_id)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'review', credited_usd: '0.00' })
    expect((await listUnsettledPayments({ deps: app.deps })).filter((u) => u.topupId === topup.id).map((u) => [u.paymentId, u.reason])).toEqual([
      [String(p.payment_id), 'topup_in_review'],
    ])
  })
})

describe("scripts/admin, the operator's side", () => {
  const admin = (...args: string[]) => {
    const env = {
      PATH: process.env.PATH ?? '',
      DATA_DIR: app.dir,
      DATABASE_URL: app.databaseUrl,
      SECRET_KEY: TEST_SECRET_KEY,
      PUBLIC_URL: 'http://gpuhq.test',
      LOG_LEVEL: 'warn',
    }
    const p = Bun.spawnSync([process.execPath, 'run', 'scripts/admin.ts', ...args], { env, cwd: join(import.meta.dir, '../..') })
    return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
  }

  test('unsettled-payments lists a payment that credited nothing; settle-payment --credit books it once; bad input gets one line and exit code 2', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    await ipn(app, app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25 }).payment_id)
    const extra = app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 7.5 })
    await ipn(app, extra.payment_id)
    const listed = admin('unsettled-payments')
    expect(listed.code).toBe(0)
    const line = listed.out.split('\n').find((l) => l.includes(`payment=nowpayments:${extra.payment_id}`))!
    expect(line).toContain(`topup=${topup.id}`)
    expect(line).toContain('amount=7.50')
    expect(line).toContain('reason=topup_already_credited')
    const id = line.split(/\s+/)[0]!

    expect(admin('settle-payment', '--id', id, '--credit', '--refunded', '--reason', 'x')).toMatchObject({
      code: 2,
      err: expect.stringContaining('admin: give exactly one of --credit or --refunded'),
    })
    const settled = admin('settle-payment', '--id', id, '--credit', '--reason', 'paid twice; kept as balance')
    expect(settled).toMatchObject({ code: 0, out: expect.stringContaining('credited 7.50 USD') })
    expect(await balanceMicros(app, owner)).toBe(32_500_000)
    expect(admin('settle-payment', '--id', id, '--credit', '--reason', 'again')).toMatchObject({ code: 2, err: expect.stringContaining('already settled') })
    expect(admin('unsettled-payments').out).not.toContain(id)
  }, 120_000)
})

describe('reactions run inside the crediting transaction', () => {
  test("a reaction that fails rolls the credit back with it: nothing half-done, and the provider's retry credits once", async () => {
    const m = await newTenant(app, 'reaction')
    const off = app.deps.events.on('topup.succeeded', ({ topup }) => {
      if (topup.tenantId === m.tenantId) throw new Error('reaction failed')
    })
    const t = await createTopup(app, m, '12.50', 'card')
    let removed = false
    try {
      const r = await sandboxPay(app, t, 'finished')
      expect(r.notification_status).toBe(500)
      expect(await getTopup(app, m, t.id)).toMatchObject({ status: 'creating', credited_usd: '0.00' })
      expect(await topupEntries(app, m.tenantId)).toEqual([])
      off()
      removed = true
      // The provider delivers its notification again.
      const body = JSON.stringify({
        payment_id: r.payment_id,
        invoice_id: t.invoice_id,
        order_id: t.id,
        payment_status: 'finished',
        price_amount: '12.50',
        price_currency: 'usd',
        actually_paid: '12.50',
      })
      const again = await app.fetch('/api/v1/billing/providers/sandbox/notify', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sandbox-signature': sandboxSignature(app.deps, body) },
        body,
      })
      expect(again.status).toBe(200)
      await again.text()
    } finally {
      if (!removed) off()
    }
    expect(await getTopup(app, m, t.id)).toMatchObject({ status: 'succeeded', credited_usd: '12.50' })
    expect(await topupEntries(app, m.tenantId)).toHaveLength(1)
  })
})

describe('the sandbox runs only where PAYMENT_PROVIDERS names it', () => {
  test('without PAYMENT_PROVIDERS no provider is enabled: no methods, top-ups answer 503 with Retry-After, and no sandbox page is served', async () => {
    const bare = await startTestApp({ LOG_LEVEL: 'silent', PAYMENT_PROVIDERS: '' })
    try {
      expect(bare.deps.config.paymentProviders).toEqual([])
      const m = await newTenant(bare, 'bare')
      const methods = await call(bare, 'GET', '/billing/payment-methods', m)
      expect(await methods.json()).toEqual({ items: [] })
      const res = await call(bare, 'POST', '/billing/topups', m, { json: { amount_usd: '25.00', payment_method: 'card' } })
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
      await expectProblem(res, 503, 'temporarily_unavailable')
      const page = await bare.fetch('/sandbox/checkout/01a203c8-0000-7000-8000-000000000000', { method: 'POST', json: { outcome: 'finished' } })
      expect(page.status).toBe(404)
      await page.text()
    } finally {
      await bare.close()
    }
  })

  test('the configuration enables no provider by default, in development as in test; the sandbox only when named, never in production', () => {
    const base = { DATA_DIR: join(app.dir, 'cfg'), SECRET_KEY: TEST_SECRET_KEY }
    expect(loadConfig({ ...base }).paymentProviders).toEqual([])
    expect(loadConfig({ ...base, NODE_ENV: 'test' }).paymentProviders).toEqual([])
    expect(loadConfig({ ...base, PAYMENT_PROVIDERS: 'sandbox' }).paymentProviders).toEqual(['sandbox'])
    expect(() => loadConfig({ ...base, NODE_ENV: 'production', PAYMENT_PROVIDERS: 'sandbox' })).toThrow(/^PAYMENT_PROVIDERS: /)
  })
})
