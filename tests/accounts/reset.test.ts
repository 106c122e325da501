import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import {
  advance,
  getMe,
  GOOD_PASSWORD,
  mailTo,
  newEmail,
  post,
  requestCode,
  sessionFrom,
  signIn,
  signUp,
  startAccountsApp,
  verifyCode,
  withSession,
  type AccountsApp,
} from '../support/accounts'
import { expectProblem } from '../support/problem'
import { codeFrom } from '../support/smtp'

/**
 * Password reset (docs/auth.md "Password reset"): always 202, an inert row for unknown emails,
 * purpose-scoped tickets, every other session revoked and a new one started.
 */

let app: AccountsApp
beforeAll(async () => {
  app = await startAccountsApp()
})
afterAll(() => app.stop())
beforeEach(() => advance(app, 3600))

const NEW_PASSWORD = 'a brand new passphrase 2026'

describe('password reset', () => {
  test('an unknown email gets 202 with the cooldown, no mail, and an inert row that keeps the same cooldown', async () => {
    const email = newEmail('nobody')
    const res = await post(app, '/auth/password-reset/start', { email })
    expect(res.status).toBe(202)
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(await res.json()).toEqual({ resend_cooldown_seconds: 60 })

    const row = await app.deps.db.get(sql`SELECT inert, code_hash, user_id FROM email_codes WHERE purpose = 'reset' AND email = ${email}`)
    expect(row).toEqual({ inert: 1, code_hash: null, user_id: null })
    await app.deps.mail.dispatchDue()
    expect(app.smtp.to(email)).toHaveLength(0)
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM mail_outbox WHERE "to" = ${email}`)).toEqual({ n: 0 })

    const again = await post(app, '/auth/password-reset/start', { email })
    expect(again.headers.get('retry-after')).toMatch(/^[1-9]\d*$/)
    await expectProblem(again, 429, 'rate_limited')
  })

  test('a known email gets a reset code by mail, standing alone on its line', async () => {
    const { email } = await signUp(app)
    expect((await post(app, '/auth/password-reset/start', { email })).status).toBe(202)
    const mail = await mailTo(app, email, (m) => m.subject.includes('password reset'))
    expect(mail.subject).toMatch(/^Your gpuhq password reset code: \d{6}$/)
    expect(codeFrom(mail)).toMatch(/^\d{6}$/)
    expect(mail.text).toContain('http://gpuhq.test')
  })

  test('completing a reset sets the new password, ends every other session and signs the user in', async () => {
    const account = await signUp(app)
    const laptop = sessionFrom(await signIn(app, account.email, account.password))!
    expect((await getMe(app, laptop)).status).toBe(200)

    const code = await requestCode(app, 'reset', account.email)
    const ticket = await verifyCode(app, 'reset', account.email, code)
    const done = await post(app, '/auth/password-reset/complete', { ticket, password: NEW_PASSWORD })
    expect(done.status).toBe(200)
    expect(done.headers.get('set-cookie')).toMatch(/^__Host-gpuhq_session=[A-Za-z0-9_-]{43}; Path=\/; Secure; HttpOnly; SameSite=Lax; Max-Age=\d+$/)
    expect(await done.json()).toMatchObject({ id: account.me.id, email: account.email, role: 'owner' })
    const fresh = sessionFrom(done)!
    expect(fresh).not.toBe(account.token)
    expect(fresh).not.toBe(laptop)

    // Both sessions from before the reset are gone server-side.
    await expectProblem(await getMe(app, account.token), 401, 'unauthorized')
    await expectProblem(await getMe(app, laptop), 401, 'unauthorized')
    expect((await getMe(app, fresh)).status).toBe(200)
    const sessions = await app.deps.db.get(sql`SELECT count(*) AS n FROM sessions WHERE user_id = ${account.me.id}`)
    expect(sessions).toEqual({ n: 1 })

    await expectProblem(await signIn(app, account.email, account.password), 401, 'unauthorized')
    expect((await signIn(app, account.email, NEW_PASSWORD)).status).toBe(201)
  })

  test('a reset ticket is single-use and expires 10 minutes after verify', async () => {
    const { email } = await signUp(app)
    const ticket = await verifyCode(app, 'reset', email, await requestCode(app, 'reset', email))
    expect((await post(app, '/auth/password-reset/complete', { ticket, password: NEW_PASSWORD })).status).toBe(200)
    await expectProblem(await post(app, '/auth/password-reset/complete', { ticket, password: 'yet another passphrase' }), 401, 'unauthorized')

    await advance(app, 60)
    const late = await verifyCode(app, 'reset', email, await requestCode(app, 'reset', email))
    await advance(app, 601)
    await expectProblem(await post(app, '/auth/password-reset/complete', { ticket: late, password: 'yet another passphrase' }), 401, 'unauthorized')
    expect((await signIn(app, email, NEW_PASSWORD)).status).toBe(201)
  })

  test('a signup ticket cannot complete a password reset, and a reset ticket cannot complete a signup', async () => {
    const victim = await signUp(app)
    const resetTicket = await verifyCode(app, 'reset', victim.email, await requestCode(app, 'reset', victim.email))
    const newcomer = newEmail('newcomer')
    const signupTicket = await verifyCode(app, 'signup', newcomer, await requestCode(app, 'signup', newcomer))

    await expectProblem(await post(app, '/auth/password-reset/complete', { ticket: signupTicket, password: NEW_PASSWORD }), 401, 'unauthorized')
    await expectProblem(await post(app, '/auth/signup/complete', { ticket: resetTicket, password: NEW_PASSWORD }), 401, 'unauthorized')

    // Nothing changed: the victim's password and session stand, no account exists for the newcomer.
    expect((await getMe(app, victim.token)).status).toBe(200)
    expect((await signIn(app, victim.email, victim.password)).status).toBe(201)
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM users WHERE email = ${newcomer}`)).toEqual({ n: 0 })

    // Each ticket still does its own job.
    expect((await post(app, '/auth/signup/complete', { ticket: signupTicket, password: GOOD_PASSWORD })).status).toBe(201)
    expect((await post(app, '/auth/password-reset/complete', { ticket: resetTicket, password: NEW_PASSWORD })).status).toBe(200)
  })

  test('a made-up or over-long ticket answers 401', async () => {
    await expectProblem(await post(app, '/auth/password-reset/complete', { ticket: 'x'.repeat(43), password: NEW_PASSWORD }), 401, 'unauthorized')
    await expectProblem(await post(app, '/auth/password-reset/complete', { ticket: 'x'.repeat(65), password: NEW_PASSWORD }), 422, 'validation_failed')
  })

  test('a weak new password is refused with 422 and leaves the ticket usable', async () => {
    const { email } = await signUp(app)
    const ticket = await verifyCode(app, 'reset', email, await requestCode(app, 'reset', email))
    const p = await expectProblem(await post(app, '/auth/password-reset/complete', { ticket, password: 'password123' }), 422, 'validation_failed')
    expect(p.errors).toEqual([{ path: '/password', code: 'too_common' }])
    expect((await post(app, '/auth/password-reset/complete', { ticket, password: NEW_PASSWORD })).status).toBe(200)
  })

  test('the session that completed the reset is the only one left, and signing out of it leaves none', async () => {
    const account = await signUp(app)
    const ticket = await verifyCode(app, 'reset', account.email, await requestCode(app, 'reset', account.email))
    const fresh = sessionFrom(await post(app, '/auth/password-reset/complete', { ticket, password: NEW_PASSWORD }))!
    const out = await app.fetch('/api/v1/auth/sessions/current', { method: 'DELETE', headers: withSession(fresh) })
    expect(out.status).toBe(204)
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM sessions WHERE user_id = ${account.me.id}`)).toEqual({ n: 0 })
  })
})
