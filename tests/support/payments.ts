import { expect } from 'bun:test'
import { sql } from 'drizzle-orm'
import { withTransaction } from '../../db/client'
import { appendEntry } from '../../src/modules/billing'
import { call, newTenant, type Caller, type Member } from './access'
import { startTestApp, TEST_PUBLIC_URL, type TestApp } from './app'
import { micros } from './billing'
import { sendIpn, startFakeNowPayments, type FakeNowPayments, type IpnOptions } from './nowpayments'

/**
 * Helpers for the payment tests: the real app with the sandbox provider and/or NOWPayments (pointed
 * at the local fake in nowpayments.ts), top-ups made and read over real HTTP, the sandbox checkout
 * page driven as a browser would, and read-only looks at the database to prove what did not change.
 */

export type Topup = {
  id: string
  status: 'creating' | 'partially_paid' | 'succeeded' | 'review' | 'expired' | 'failed'
  amount_usd: string
  credited_usd: string
  payment_method: string
  provider: string
  provider_status: string | null
  purpose: { kind: string; target_plan?: string | null; change_id?: string | null }
  checkout_url?: string
  invoice_id: string | null
  review_reason: string | null
  created_at: string
  expires_at: string
  succeeded_at: string | null
  updated_at: string
}

export type PaymentsApp = TestApp & { np: FakeNowPayments; stop: () => Promise<void> }

/** The app with `providers` enabled (default both, sandbox first) and NOWPayments pointed at a fresh fake. */
export async function startPaymentsApp(providers = 'sandbox,nowpayments', env: Record<string, string> = {}): Promise<PaymentsApp> {
  const np = await startFakeNowPayments()
  const app = await startTestApp({
    LOG_LEVEL: 'silent',
    PAYMENT_PROVIDERS: providers,
    NOWPAYMENTS_API_KEY: np.apiKey,
    NOWPAYMENTS_IPN_SECRET: np.ipnSecret,
    NOWPAYMENTS_API_URL: np.url,
    ...env,
  })
  return Object.assign(app, {
    np,
    stop: async () => {
      await app.close()
      await np.close()
    },
  })
}

export type Created = { res: Response; status: number; body: any; text: string }

/** POST /billing/topups as `caller`; returns the answer (its body still unread, for expectProblem), status and parsed body. */
export async function postTopup(app: TestApp, caller: Caller, json: unknown, headers: Record<string, string> = {}): Promise<Created> {
  const res = await call(app, 'POST', '/billing/topups', caller, { json, headers })
  const text = await res.clone().text()
  let body: any = null
  try {
    body = JSON.parse(text)
  } catch {}
  return { res, status: res.status, body, text }
}

/** A top-up that must be created (201). */
export async function createTopup(app: TestApp, caller: Caller, amount: string, method: string, headers: Record<string, string> = {}): Promise<Topup> {
  const r = await postTopup(app, caller, { amount_usd: amount, payment_method: method, purpose: { kind: 'wallet' } }, headers)
  expect({ status: r.status, body: r.text }).toMatchObject({ status: 201 })
  return r.body as Topup
}

export async function getTopup(app: TestApp, caller: Caller, id: string): Promise<Topup> {
  const res = await call(app, 'GET', `/billing/topups/${id}`, caller)
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
  return JSON.parse(text) as Topup
}

/** The balance as GET /billing shows it, in micro-USD. */
export async function balanceMicros(app: TestApp, caller: Caller): Promise<number> {
  const res = await call(app, 'GET', '/billing', caller)
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
  return micros(JSON.parse(text).balance_usd)
}

/** The tenant's topup ledger rows straight from the database. */
export async function topupEntries(
  app: TestApp,
  tenantId: string,
): Promise<{ amount_micros: number; payment_ref: string | null; balance_after_micros: number }[]> {
  return await app.deps.db.all(
    sql`SELECT amount_micros, payment_ref, balance_after_micros FROM ledger_entries WHERE tenant_id = ${tenantId} AND kind = 'topup' ORDER BY seq`,
  )
}

/** Notifications the service recorded for a top-up (or for none, topupId null). */
export async function notificationsOf(app: TestApp, topupId: string | null): Promise<{ outcome: string; reported_status: string; payment_id: string }[]> {
  return await app.deps.db.all(
    topupId === null
      ? sql`SELECT outcome, reported_status, payment_id FROM payment_notifications WHERE topup_id IS NULL ORDER BY received_at`
      : sql`SELECT outcome, reported_status, payment_id FROM payment_notifications WHERE topup_id = ${topupId} ORDER BY received_at`,
  )
}

const allNotifications = async (app: TestApp) => (await app.deps.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM payment_notifications`))!.n

/** The path of a sandbox checkout URL, which names PUBLIC_URL; the page is served by this app. */
export function checkoutPath(t: Topup): string {
  expect(t.checkout_url).toBeDefined()
  expect(t.checkout_url!.startsWith(`${TEST_PUBLIC_URL}/sandbox/checkout/`)).toBe(true)
  return t.checkout_url!.slice(TEST_PUBLIC_URL.length)
}

/** Presses a button on the sandbox checkout page (its POST, as the page's script sends it). */
export async function sandboxPay(app: TestApp, t: Topup, outcome: string, amount?: string): Promise<{ payment_id: string; notification_status: number }> {
  const res = await app.fetch(checkoutPath(t), { method: 'POST', json: { outcome, ...(amount === undefined ? {} : { amount_usd: amount }) } })
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
  return JSON.parse(text)
}

/** A tenant with its owner signed in and a NOWPayments top-up of `amount` already invoiced at the fake. */
export async function npTopup(app: PaymentsApp, amount = '25.00', owner?: Member): Promise<{ owner: Member; topup: Topup }> {
  const o = owner ?? (await newTenant(app, 'np'))
  const topup = await createTopup(app, o, amount, 'btc')
  expect(topup.provider).toBe('nowpayments')
  expect(app.np.invoices.get(topup.invoice_id!)).toBeDefined()
  return { owner: o, topup }
}

/** Sends a signed IPN for the payment as it stands at the fake; returns status and body. */
export async function ipn(app: PaymentsApp, paymentId: number, overrides: Record<string, unknown> = {}, opts: IpnOptions = {}) {
  const res = await sendIpn(app.url, app.np.ipnBody(paymentId, overrides), opts)
  const text = await res.text()
  return { status: res.status, text, body: text ? (JSON.parse(text) as any) : null }
}

/** Everything about a top-up that must not change when a notification is refused. */
export async function snapshot(app: TestApp, topupId: string) {
  const row = await app.deps.db.get(sql`SELECT status, provider_status, payment_id, credited_micros, version FROM topups WHERE id = ${topupId}`)
  const ledger = (await app.deps.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM ledger_entries`))!.n
  return { row, ledger, notifications: await allNotifications(app) }
}

/** A manual debit booked through the ledger module (no HTTP operation books adjustments yet). */
export async function debit(app: TestApp, tenantId: string, amountMicros: number): Promise<void> {
  await withTransaction(app.deps.db, (tx) =>
    appendEntry(tx, app.deps, { tenantId, kind: 'adjustment', amountMicros: -amountMicros, occurredAt: app.deps.clock.nowUs(), detail: 'manual debit (test)' }),
  )
}

export type JobReply = { job: string; now: string; outcome: string; detail: string | null }
/** POST /_test/jobs/billing.reconcile/run; expects the run itself to succeed. */
export async function runReconcile(app: TestApp): Promise<JobReply> {
  const res = await app.fetch('/api/v1/_test/jobs/billing.reconcile/run', { method: 'POST' })
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
  const body = JSON.parse(text) as JobReply
  expect({ outcome: body.outcome, detail: body.detail }).toMatchObject({ outcome: 'succeeded' })
  return body
}
