import { expect } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from './app'
import { codeFrom, startFakeSmtp, type FakeSmtp, type ReceivedMail } from './smtp'
import { tableNames } from './postgres'

/** Helpers for the account tests: an app wired to a local SMTP server, and the flows as steps. */

export const SESSION_COOKIE = '__Host-gpuhq_session'
export const GOOD_PASSWORD = 'correct horse battery staple 42'

export type AccountsApp = TestApp & { smtp: FakeSmtp; stop: () => Promise<void> }

/** The real app with signup on and mail going to a fresh local SMTP server. */
export async function startAccountsApp(env: Record<string, string> = {}): Promise<AccountsApp> {
  const smtp = await startFakeSmtp()
  const app = await startTestApp({ SIGNUP_ENABLED: 'true', SMTP_URL: smtp.url, LOG_LEVEL: 'silent', ...env })
  return Object.assign(app, {
    smtp,
    stop: async () => {
      // A refusing server ends a dispatch run at its first message instead of sending the backlog.
      smtp.refuse(true)
      await app.deps.mail.idle()
      await app.close()
      await smtp.close()
    },
  })
}

let seq = 0
/** A fresh address per call, so cooldowns and per-email limits never leak between tests. */
export function newEmail(tag = 'user'): string {
  return `${tag}-${Date.now().toString(36)}-${++seq}@example.test`
}

export async function advance(app: TestApp, seconds: number): Promise<void> {
  const res = await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } })
  expect(res.status).toBe(200)
}

export function post(app: TestApp, path: string, json: unknown, headers: Record<string, string> = {}) {
  return app.fetch(`/api/v1${path}`, { method: 'POST', json, headers })
}

/** Sends whatever the outbox holds and returns the newest message to `to` matching `predicate`. */
export async function mailTo(app: AccountsApp, to: string, predicate: (m: ReceivedMail) => boolean = () => true): Promise<ReceivedMail> {
  await app.deps.mail.idle()
  await app.deps.mail.dispatchDue()
  const found = app.smtp.to(to).filter(predicate)
  if (found.length) return found[found.length - 1]!
  return app.smtp.waitForMail(to, predicate)
}

/** Starts signup (or reset) and returns the code mailed for it. */
export async function requestCode(app: AccountsApp, kind: 'signup' | 'reset', email: string, tenantName = 'Acme GPUs'): Promise<string> {
  const before = app.smtp.to(email).length
  const res =
    kind === 'signup' ? await post(app, '/auth/signup/start', { email, tenant_name: tenantName }) : await post(app, '/auth/password-reset/start', { email })
  expect(res.status).toBe(202)
  await app.deps.mail.idle()
  await app.deps.mail.dispatchDue()
  const msg = await app.smtp.waitForMail(email, (m) => app.smtp.to(email).indexOf(m) >= before)
  return codeFrom(msg)
}

export async function verifyCode(app: TestApp, kind: 'signup' | 'reset', email: string, code: string): Promise<string> {
  const res = await post(app, kind === 'signup' ? '/auth/signup/verify' : '/auth/password-reset/verify', { email, code })
  expect(res.status).toBe(200)
  const { ticket } = (await res.json()) as { ticket: string }
  return ticket
}

/** The session token a Set-Cookie header hands out, or null. */
export function sessionFrom(res: Response): string | null {
  const header = res.headers.get('set-cookie')
  const m = header && new RegExp(`^${SESSION_COOKIE}=([^;]*)`).exec(header)
  return m ? m[1]! : null
}

export const withSession = (token: string, extra: Record<string, string> = {}) => ({ cookie: `${SESSION_COOKIE}=${token}`, ...extra })

export type Account = { email: string; password: string; token: string; me: { id: string; tenant_id: string; role: string; email: string } }
/** GET /me and PATCH /me answer the whole profile. */
export type Me = Account['me'] & { display_name: string | null; timezone: string; locale: string; created_at: string }

/** The whole signup flow through real mail; returns the account's session token. */
export async function signUp(app: AccountsApp, email = newEmail(), password = GOOD_PASSWORD, tenantName = 'Acme GPUs'): Promise<Account> {
  const code = await requestCode(app, 'signup', email, tenantName)
  const ticket = await verifyCode(app, 'signup', email, code)
  const res = await post(app, '/auth/signup/complete', { ticket, password })
  expect(res.status).toBe(201)
  const token = sessionFrom(res)
  expect(token).not.toBeNull()
  return { email, password, token: token!, me: (await res.json()) as Account['me'] }
}

export function signIn(app: TestApp, email: string, password: string, headers: Record<string, string> = {}) {
  return post(app, '/auth/sessions', { email, password }, headers)
}

export function getMe(app: TestApp, token: string, headers: Record<string, string> = {}) {
  return app.fetch('/api/v1/me', { headers: withSession(token, headers) })
}

async function countRows(app: TestApp, table: string): Promise<number> {
  return (await app.deps.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM ${sql.identifier(table)}`))!.n
}

/** Every table's row count, to show a request wrote nothing. */
export async function allRowCounts(app: TestApp): Promise<Record<string, number>> {
  const counts: [string, number][] = []
  for (const name of await tableNames(app.deps.db)) counts.push([name, await countRows(app, name)])
  return Object.fromEntries(counts)
}

/** Headers as a plain object without the ones that differ on every response. */
export function stableHeaders(res: Response): Record<string, string> {
  const out: Record<string, string> = {}
  res.headers.forEach((v, k) => {
    if (k !== 'date' && k !== 'x-request-id') out[k] = v
  })
  return out
}

/** A response body with the per-request fields (request_id, and instance which is the path) removed. */
export async function stableBody(res: Response): Promise<string> {
  const text = await res.text()
  try {
    const doc = JSON.parse(text) as Record<string, unknown>
    delete doc.request_id
    return JSON.stringify(doc)
  } catch {
    return text
  }
}
