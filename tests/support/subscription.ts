import { expect } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createAccount } from '../../src/modules/accounts'
import { adjustBalance } from '../../src/modules/billing'
import { upsertPlan } from '../../src/modules/plans'
import type { Role } from '../../src/platform/access'
import { call, insertServer, setPlan, type Caller, type Member } from './access'
import { GOOD_PASSWORD, newEmail, sessionFrom } from './accounts'
import { startTestApp, TEST_PUBLIC_URL, type TestApp } from './app'

/**
 * Helpers for the subscription tests. Everything a user does goes through real HTTP; the operator's
 * verbs (adjust a balance, edit the catalogue) are called in process as scripts/admin does. Rows no
 * HTTP operation writes (servers, a tenant's starting plan, a plan's change policy, a frozen account)
 * go straight into the real database. Money, days and timestamps are parsed here independently of
 * src/, so a formatting or calendar bug there shows.
 */

const US_PER_SECOND = 1_000_000
export const US_PER_HOUR = 3600 * US_PER_SECOND
const US_PER_DAY = 24 * US_PER_HOUR
const YEAR_S = String(365 * 86400)

/** The real app with the sandbox provider; sessions and grace long enough for months of test clock. */
export function startSubscriptionApp(env: Record<string, string> = {}): Promise<TestApp> {
  return startTestApp({
    LOG_LEVEL: 'silent',
    PAYMENT_PROVIDERS: 'sandbox',
    SESSION_IDLE_SECONDS: YEAR_S,
    SESSION_ABSOLUTE_SECONDS: YEAR_S,
    GRACE_PERIOD_HOURS: String(24 * 90),
    // Each test user signs in from its own network (signIn), so the per-network limit of the
    // set-password step never trips in files that make dozens of tenants.
    TRUSTED_PROXIES: '127.0.0.1',
    ...env,
  })
}

// ---- money, time and calendar, computed independently of src/ ----

export { iso, micros, usOf } from './wire'
import { iso, micros, usOf } from './wire'
export const dayOf = (us: number) => new Date(Math.floor(us / 1000)).toISOString().slice(0, 10)
export const dayStartUs = (day: string) => Date.parse(`${day}T00:00:00Z`) * 1000
export const addDays = (day: string, n: number) => dayOf(dayStartUs(day) + n * US_PER_DAY)
export const daysOfMonth = (us: number) => {
  const d = new Date(Math.floor(us / 1000))
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate()
}
export const firstOfNextMonth = (us: number) => {
  const d = new Date(Math.floor(us / 1000))
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString().slice(0, 10)
}
/** Whole micro-USD of price ÷ days, halves away from zero (the rounding of every money division). */
export const dailyRate = (priceMicros: number, days: number) => Math.round(priceMicros / days)

// ---- the test clock and jobs ----

export async function clockTo(app: TestApp, us: number): Promise<number> {
  const res = await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { now: iso(us) } })
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
  return usOf(JSON.parse(text).now)
}
export const serviceNow = (app: TestApp) => app.deps.clock.nowUs()
/** Jumps to `hour`:00 UTC of the next UTC day (so "today" is stable for the rest of a test). */
export const nextDayAt = (app: TestApp, hour: number) => clockTo(app, dayStartUs(addDays(dayOf(serviceNow(app)), 1)) + hour * US_PER_HOUR)
/** Jumps to `hour`:00 UTC on the 10th of next month (a day well inside a month). */
export const midNextMonth = (app: TestApp, hour = 10) => clockTo(app, dayStartUs(addDays(firstOfNextMonth(serviceNow(app)), 9)) + hour * US_PER_HOUR)

export async function runJob(app: TestApp, job: 'subscription.fire' | 'billing.charge'): Promise<string | null> {
  const res = await app.fetch(`/api/v1/_test/jobs/${job}/run`, { method: 'POST' })
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
  const body = JSON.parse(text)
  expect({ job, outcome: body.outcome, detail: body.detail }).toMatchObject({ outcome: 'succeeded' })
  return body.detail
}

// ---- tenants, plans, balances ----

let network = 0
/** Sets the password with the operator's ticket from a fresh client network; returns the session. */
async function signIn(app: TestApp, ticket: string): Promise<string> {
  const n = ++network
  const res = await app.fetch('/api/v1/auth/password-reset/complete', {
    method: 'POST',
    json: { ticket, password: GOOD_PASSWORD },
    headers: { 'x-forwarded-for': `10.${(n >> 8) & 255}.${n & 255}.7` },
  })
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
  return sessionFrom(res)!
}

/** A new tenant (the operator's createAccount) and its owner, signed in. */
async function newOwner(app: TestApp, tag = 'owner'): Promise<Member> {
  const email = newEmail(tag)
  const { tenantId, userId, ticket } = await createAccount({ deps: app.deps, input: { email, tenantName: `${tag} rigs` } })
  return { userId, tenantId, email, role: 'owner', session: await signIn(app, ticket) }
}

/** A member with `role` in the tenant: made by the operator, then moved in (no HTTP operation invites yet). */
export async function newMember(app: TestApp, tenantId: string, role: Role): Promise<Member> {
  const email = newEmail(role)
  const made = await createAccount({ deps: app.deps, input: { email, tenantName: 'stray' } })
  await app.deps.db.run(sql`UPDATE users SET tenant_id = ${tenantId}, role = ${role} WHERE id = ${made.userId}`)
  await app.deps.db.run(sql`DELETE FROM tenants WHERE id = ${made.tenantId}`)
  return { userId: made.userId, tenantId, email, role, session: await signIn(app, made.ticket) }
}

/** A tenant on `plan` with `servers` managed servers and `balance` USD (an operator adjustment), its owner signed in. */
export async function tenantOn(app: TestApp, plan: string | null, opts: { servers?: number; balance?: string } = {}): Promise<Member> {
  const m = await newOwner(app, `sub-${plan ?? 'none'}`)
  await setPlan(app, m.tenantId, plan)
  for (let i = 0; i < (opts.servers ?? 0); i++) await insertServer(app, m.tenantId, `rig-${i + 1}`)
  if (opts.balance !== undefined && micros(opts.balance) !== 0)
    await adjustBalance({ deps: app.deps, input: { tenantId: m.tenantId, amount: opts.balance, reason: 'test balance' } })
  return m
}

export const adjust = (app: TestApp, tenantId: string, amount: string) =>
  adjustBalance({ deps: app.deps, input: { tenantId, amount, reason: 'test adjustment' } })

let planSeq = 0
/** A fresh catalogue entry (the operator's upsert), so catalogue edits in one test never touch another. */
export async function addPlan(app: TestApp, o: { price: string; label?: string; serversMax?: string; features?: string; code?: string }): Promise<string> {
  const code = o.code ?? `t${Date.now().toString(36)}_${++planSeq}`
  await upsertPlan({
    deps: app.deps,
    input: { code, label: o.label ?? `Test ${planSeq}`, price: o.price, serversMax: o.serversMax ?? 'unlimited', features: o.features ?? '' },
  })
  return code
}
export const editPlan = (app: TestApp, code: string, input: { label?: string; price?: string }) => upsertPlan({ deps: app.deps, input: { code, ...input } })
/** The plan's change policy; no operator verb writes it, so the row is updated directly. */
export async function setPolicy(app: TestApp, code: string, p: { upgrade?: 'same_day' | 'next_day'; downgrade?: 'next_month' | 'next_day' }): Promise<void> {
  if (p.upgrade) await app.deps.db.run(sql`UPDATE plans SET upgrade_effective = ${p.upgrade} WHERE code = ${code}`)
  if (p.downgrade) await app.deps.db.run(sql`UPDATE plans SET downgrade_effective = ${p.downgrade} WHERE code = ${code}`)
}

// ---- the subscription API ----

export type Reply<T = any> = { res: Response; status: number; body: T; text: string }
async function reply<T>(res: Response): Promise<Reply<T>> {
  const text = await res.clone().text()
  let body: any = null
  try {
    body = JSON.parse(text)
  } catch {}
  return { res, status: res.status, body, text }
}

export type Change = {
  id: string
  status: 'applied' | 'scheduled' | 'awaiting_payment' | 'cancelled' | 'refused'
  direction: 'upgrade' | 'downgrade' | 'lateral'
  from_plan: string
  target_plan: string
  effective_at: string
  billing_effective_day: string
  required_reserve_usd: string
  refusal_reason: string | null
  topup_id: string | null
  requested_at: string
  applied_at: string | null
  cancelled_at: string | null
  refused_at: string | null
}
export type Subscription = {
  plan: { code: string; capabilities: Record<string, unknown> } | null
  pending_change: Change | null
  last_change: Change | null
  account_state: string
  version: number
}

export type Quote = {
  target_plan: string
  current_plan: string
  direction: Change['direction']
  managed_servers: number
  monthly_price_per_server_usd: string
  unit_daily_rate_usd: string
  required_reserve_usd: string
  balance_usd: string
  covered: boolean
  server_limit: number | null
  billing_effective_day: string
  quoted_at: string
}

export const getQuote = async (app: TestApp, who: Caller, plan: string) =>
  reply<Quote>(await call(app, 'GET', `/subscription/quote?plan=${encodeURIComponent(plan)}`, who))

export const order = async (app: TestApp, who: Caller, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  reply<Change>(await call(app, 'POST', '/subscription/changes', who, { json: body, headers }))

/** An order that must answer `status`; returns the change. */
export async function orderOk(
  app: TestApp,
  who: Caller,
  body: Record<string, unknown>,
  status: 200 | 201,
  headers: Record<string, string> = {},
): Promise<Change> {
  const r = await order(app, who, body, headers)
  expect({ status: r.status, body: r.text }).toMatchObject({ status })
  return r.body
}

export const cancel = async (app: TestApp, who: Caller, id: string) => reply<Change>(await call(app, 'DELETE', `/subscription/changes/${id}`, who))

export async function subscription(app: TestApp, who: Caller): Promise<{ body: Subscription; etag: string }> {
  const res = await call(app, 'GET', '/subscription', who)
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
  return { body: JSON.parse(text), etag: res.headers.get('etag')! }
}

async function getJson<T = any>(app: TestApp, who: Caller, path: string): Promise<T> {
  const res = await call(app, 'GET', path, who)
  const text = await res.text()
  expect({ path, status: res.status, body: text }).toMatchObject({ status: 200 })
  return JSON.parse(text)
}

export const currentPlan = async (app: TestApp, who: Caller) =>
  (await getJson(app, who, '/plans/current')).plan as { code: string; capabilities: Record<string, unknown> } | null
export const balanceOf = async (app: TestApp, who: Caller) => micros((await getJson(app, who, '/billing')).balance_usd)

// ---- top-ups through the sandbox checkout page ----

export type Topup = { id: string; status: string; checkout_url?: string; purpose: { kind: string; target_plan?: string | null; change_id?: string | null } }

export async function createTopup(app: TestApp, who: Caller, amount: string, purpose: Record<string, unknown>): Promise<Topup> {
  const res = await call(app, 'POST', '/billing/topups', who, { json: { amount_usd: amount, payment_method: 'card', purpose } })
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 201 })
  return JSON.parse(text)
}

/** Presses "finished" on the sandbox checkout page for `amount` (served by this app; PUBLIC_URL only names it). */
export async function payOnCheckoutPage(app: TestApp, t: Topup, amount: string): Promise<void> {
  expect(t.checkout_url?.startsWith(`${TEST_PUBLIC_URL}/sandbox/checkout/`)).toBe(true)
  const path = t.checkout_url!.slice(TEST_PUBLIC_URL.length)
  const page = await app.fetch(path)
  expect(page.status).toBe(200)
  await page.text()
  const res = await app.fetch(path, { method: 'POST', json: { outcome: 'finished', amount_usd: amount } })
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 200 })
  expect(JSON.parse(text).notification_status).toBe(200)
}

export const topupStatus = async (app: TestApp, who: Caller, id: string) => (await getJson(app, who, `/billing/topups/${id}`)).status as string

// ---- what the service recorded ----

export async function notificationEvents(app: TestApp, tenantId: string): Promise<{ category: string; kind: string; payload: string }[]> {
  return await app.deps.db.all(sql`SELECT category, kind, payload FROM notification_events WHERE tenant_id = ${tenantId} ORDER BY id`)
}

export type LedgerItem = {
  kind: string
  amount_usd: string
  charge_day: string | null
  charge_hour: string | null
  detail: string
  calculation_id: string | null
}
/** The tenant's charges as GET /billing/ledger shows them, oldest hour first. */
export async function charges(app: TestApp, who: Member): Promise<LedgerItem[]> {
  const out: LedgerItem[] = []
  let cursor: string | null = null
  do {
    const qs = new URLSearchParams({ kind: 'charge', limit: '200', ...(cursor ? { cursor } : {}) })
    const page = await getJson<{ items: LedgerItem[]; next_cursor: string | null }>(app, who, `/billing/ledger?${qs}`)
    out.push(...page.items)
    cursor = page.next_cursor
  } while (cursor)
  return out.sort((a, b) => usOf(a.charge_hour!) - usOf(b.charge_hour!))
}
