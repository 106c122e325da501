import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { call } from '../support/access'
import { workerEnv } from '../support/app'
import { balanceMicros, getTopup, ipn, startPaymentsApp, type PaymentsApp } from '../support/payments'
import { orderOk, subscription, tenantOn } from '../support/subscription'

/**
 * Issue 13 finding 14: cross-module reactions are wired in the composition root, so a process that
 * only runs jobs (it never built the HTTP routes) applies a paid upgrade exactly as one serving HTTP
 * does. Here billing.reconcile, in a separate process, settles a payment whose notification was
 * lost; the upgrade waiting for it is applied inside that same crediting transaction.
 */
const WORKER = join(import.meta.dir, '../support/jobs-worker.ts')
let app: PaymentsApp
beforeAll(async () => {
  app = await startPaymentsApp('nowpayments')
})
afterAll(() => app.stop())

const env = () =>
  workerEnv(app, {
    PAYMENT_PROVIDERS: 'nowpayments',
    NOWPAYMENTS_API_KEY: app.np.apiKey,
    NOWPAYMENTS_IPN_SECRET: app.np.ipnSecret,
    NOWPAYMENTS_API_URL: app.np.url,
  })

describe('a jobs-only process', () => {
  test('billing.reconcile run by a process that never built the HTTP app credits a late payment and applies the upgrade it pays for', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 2 })
    const change = await orderOk(app, owner, { target_plan: 'pro' }, 201)
    expect(change.status).toBe('awaiting_payment')
    const res = await call(app, 'POST', '/billing/topups', owner, {
      json: { amount_usd: '25.00', payment_method: 'btc', purpose: { kind: 'subscription_change', target_plan: 'pro', change_id: change.id } },
    })
    expect(res.status).toBe(201)
    const topup = (await res.json()) as { id: string; invoice_id: string }
    const p = app.np.pay(topup.invoice_id, { status: 'waiting' })
    await ipn(app, p.payment_id) // the service learns the payment id; nothing is credited yet
    app.np.pay(topup.invoice_id, { status: 'finished', paidUsd: 25, paymentId: p.payment_id }) // its IPN is lost

    const proc = Bun.spawn([process.execPath, 'run', WORKER, 'billing.reconcile'], { env: env(), stdout: 'pipe', stderr: 'pipe' })
    const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
    expect({ code, err }).toMatchObject({ code: 0 })
    expect(JSON.parse(out.trim().split('\n').pop()!)).toMatchObject({ job: 'billing.reconcile', outcome: 'succeeded' })

    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '25.00' })
    expect(await balanceMicros(app, owner)).toBe(25_000_000)
    const sub = (await subscription(app, owner)).body
    expect(sub.plan!.code).toBe('pro')
    expect(sub.pending_change).toBeNull()
    expect(sub.last_change).toMatchObject({ id: change.id, status: 'applied', topup_id: topup.id })
  }, 60_000)
})
