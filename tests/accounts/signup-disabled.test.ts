import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { allRowCounts, mailTo, newEmail, post, startAccountsApp, type AccountsApp } from '../support/accounts'
import { expectProblem } from '../support/problem'

/**
 * docs/auth.md "Signup": with public signup off (the default) all three signup operations answer
 * 404 for every request, before the body is parsed and before storage is touched. Password reset is
 * not gated by the switch.
 */

let app: AccountsApp
beforeAll(async () => {
  app = await startAccountsApp({ SIGNUP_ENABLED: 'false' })
})
afterAll(() => app.stop())

const OPERATIONS = ['/api/v1/auth/signup/start', '/api/v1/auth/signup/verify', '/api/v1/auth/signup/complete']

const REQUESTS: [string, RequestInit][] = [
  ['a valid start body', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@example.test', tenant_name: 'A' }) }],
  ['a valid verify body', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@example.test', code: '123456' }) }],
  [
    'a valid complete body',
    { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ticket: 'x'.repeat(43), password: 'long enough password' }) },
  ],
  ['malformed JSON', { headers: { 'content-type': 'application/json' }, body: '{"email": ' }],
  ['a body that is not UTF-8', { headers: { 'content-type': 'application/json' }, body: new Uint8Array([0xff, 0xfe, 0x7b]) }],
  ['a text/plain body', { headers: { 'content-type': 'text/plain' }, body: 'hello' }],
  ['a form-encoded body', { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'email=a%40example.test' }],
  ['no body at all', {}],
  // (Connection: close: the server answers without reading the body, and a kept-alive connection
  // with an unread body would hold up the app's graceful stop.)
  [
    'a body over the 1 MiB limit',
    { headers: { 'content-type': 'application/json', connection: 'close' }, body: JSON.stringify({ email: 'x'.repeat(2 * 1024 * 1024) }) },
  ],
  ['a schema-violating body', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ nope: [1, 2, 3] }) }],
]

describe('signup switched off', () => {
  test('/auth/config reports signup_enabled false', async () => {
    const res = await app.fetch('/api/v1/auth/config')
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ signup_enabled: false, captcha: { enabled: false } })
  })

  for (const path of OPERATIONS)
    test(`${path.replace('/api/v1', '')} answers 404 to every request and writes nothing`, async () => {
      const before = await allRowCounts(app)
      for (const [what, init] of REQUESTS) {
        const res = await app.fetch(path, { method: 'POST', ...init })
        const p = await expectProblem(res, 404, 'not_found')
        expect({ what, detail: p.detail }).toEqual({ what, detail: 'signup is disabled on this deployment' })
      }
      expect(await allRowCounts(app)).toEqual(before)
      await app.deps.mail.dispatchDue()
      expect(app.smtp.messages).toHaveLength(0)
    })

  test('other methods on the signup paths answer 404 too, not 405: the operations do not exist', async () => {
    for (const path of OPERATIONS)
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const res = await app.fetch(path, { method })
        await expectProblem(res, 404, 'not_found')
        expect(res.headers.get('allow')).toBeNull()
      }
  })

  test('the 404 is the same whatever the body, so it tells nothing about how the body would have been read', async () => {
    const bodies = await Promise.all(
      REQUESTS.map(async ([, init]) => {
        const doc = (await (await app.fetch(OPERATIONS[0]!, { method: 'POST', ...init })).json()) as Record<string, unknown>
        delete doc.request_id
        return JSON.stringify(doc)
      }),
    )
    expect(new Set(bodies).size).toBe(1)
  })

  test('password reset still works while signup is off', async () => {
    const email = newEmail('reset-while-off')
    const res = await post(app, '/auth/password-reset/start', { email })
    expect(res.status).toBe(202)
    expect(await res.json()).toEqual({ resend_cooldown_seconds: 60 })
    // Unknown email: an inert row, no mail.
    expect(await app.deps.db.get(sql`SELECT inert FROM email_codes WHERE purpose = 'reset' AND email = ${email}`)).toEqual({ inert: 1 })
    await app.deps.mail.dispatchDue()
    expect(app.smtp.to(email)).toHaveLength(0)
  })

  test('an account created while signup was on can still sign in and reset its password after it is switched off', async () => {
    // Another app over the same database file with signup on creates the account.
    const { startTestApp } = await import('../support/app')
    const on = await startTestApp({ SIGNUP_ENABLED: 'true', DATABASE_URL: app.databaseUrl, SMTP_URL: app.smtp.url })
    try {
      const email = newEmail('made-while-on')
      expect((await on.fetch('/api/v1/auth/signup/start', { method: 'POST', json: { email, tenant_name: 'T' } })).status).toBe(202)
      await on.deps.mail.dispatchDue()
      const code = /^\d{6}$/m.exec((await app.smtp.waitForMail(email)).text)![0]
      const { ticket } = (await (await on.fetch('/api/v1/auth/signup/verify', { method: 'POST', json: { email, code } })).json()) as { ticket: string }
      expect((await on.fetch('/api/v1/auth/signup/complete', { method: 'POST', json: { ticket, password: 'a perfectly fine password' } })).status).toBe(201)

      expect((await post(app, '/auth/sessions', { email, password: 'a perfectly fine password' })).status).toBe(201)
      expect((await post(app, '/auth/password-reset/start', { email })).status).toBe(202)
      expect((await mailTo(app, email, (m) => m.subject.includes('password reset'))).subject).toContain('password reset code')
    } finally {
      await on.deps.mail.idle()
      // Removes only the second app's own (empty) temp dir; the database file belongs to `app`.
      await on.close()
    }
  })
})
