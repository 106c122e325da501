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
  type AccountsApp,
  type Me,
} from '../support/accounts'
import { expectProblem } from '../support/problem'
import { codeFrom } from '../support/smtp'

/** Signup: start, verify, complete (docs/auth.md "Signup"). */

let app: AccountsApp
beforeAll(async () => {
  app = await startAccountsApp()
})
afterAll(() => app.stop())
// Each test starts with full per-network buckets (signup start allows 20 an hour per network).
beforeEach(() => advance(app, 3600))

const SESSION_SET_COOKIE = /^__Host-gpuhq_session=[A-Za-z0-9_-]{43}; Path=\/; Secure; HttpOnly; SameSite=Lax; Max-Age=\d+$/

describe('signup', () => {
  test('a new owner signs up with the code from a real email and is signed in as owner of a tenant on the free plan', async () => {
    const config = (await (await app.fetch('/api/v1/auth/config')).json()) as Record<string, unknown>
    expect(config).toMatchObject({ signup_enabled: true, captcha: { enabled: false }, password: { min_length: 8, max_length: 256 } })
    expect(config.code).toEqual({ length: 6, ttl_seconds: 600, max_attempts: 5, resend_cooldown_seconds: 60 })

    const email = newEmail('owner')
    const start = await post(app, '/auth/signup/start', { email, tenant_name: 'Rig Farm Ltd' })
    expect(start.status).toBe(202)
    expect(start.headers.get('cache-control')).toBe('no-store')
    expect(await start.json()).toEqual({ resend_cooldown_seconds: 60 })

    const mail = await mailTo(app, email)
    expect(mail.to).toEqual([email])
    expect(mail.headers.from).toContain('no-reply@gpuhq.test')
    const code = codeFrom(mail)
    expect(code).toMatch(/^\d{6}$/)
    expect(mail.html).toContain(code)

    const verify = await post(app, '/auth/signup/verify', { email, code })
    expect(verify.status).toBe(200)
    const { ticket } = (await verify.json()) as { ticket: string }
    expect(typeof ticket).toBe('string')
    expect(ticket.length).toBeLessThanOrEqual(64)

    const complete = await post(app, '/auth/signup/complete', { ticket, password: GOOD_PASSWORD })
    expect(complete.status).toBe(201)
    const setCookie = complete.headers.get('set-cookie')!
    expect(setCookie).toMatch(SESSION_SET_COOKIE)
    expect(setCookie.toLowerCase()).not.toContain('domain')
    const me = (await complete.json()) as Me
    expect(me).toMatchObject({ email, role: 'owner', timezone: 'UTC', locale: 'en', display_name: null })

    const token = sessionFrom(complete)!
    const meRes = await getMe(app, token)
    expect(meRes.status).toBe(200)
    expect(await meRes.json()).toMatchObject({ id: me.id, email, role: 'owner', tenant_id: me.tenant_id })

    const tenant = await app.deps.db.get(sql`SELECT name, plan_code, account_state FROM tenants WHERE id = ${me.tenant_id}`)
    expect(tenant).toEqual({ name: 'Rig Farm Ltd', plan_code: 'free', account_state: 'active' })
    const user = await app.deps.db.get(sql`SELECT role, tenant_id FROM users WHERE email = ${email}`)
    expect(user).toEqual({ role: 'owner', tenant_id: me.tenant_id })
  })

  test('the email address is matched case-insensitively and stored in lower case', async () => {
    const lower = newEmail('mixed')
    const mixed = lower.replace('mixed', 'MiXeD').toUpperCase()
    const code = await requestCode(app, 'signup', mixed)
    const ticket = await verifyCode(app, 'signup', lower, code)
    const res = await post(app, '/auth/signup/complete', { ticket, password: GOOD_PASSWORD })
    expect(res.status).toBe(201)
    expect(((await res.json()) as Me).email).toBe(lower)
    expect((await signIn(app, mixed, GOOD_PASSWORD)).status).toBe(201)
  })

  test('a taken email gets an "already have an account" email and no code', async () => {
    const { email } = await signUp(app)
    await advance(app, 61)
    const before = app.smtp.to(email).length
    const again = await post(app, '/auth/signup/start', { email, tenant_name: 'Second Try' })
    expect(again.status).toBe(202)
    expect(await again.json()).toEqual({ resend_cooldown_seconds: 60 })

    const mail = await mailTo(app, email, (m) => app.smtp.to(email).indexOf(m) >= before)
    expect(mail.subject).toBe('You already have a gpuhq account')
    expect(mail.text).toContain('you already have an account')
    expect(mail.text).toContain('http://gpuhq.test')
    expect(mail.text.split('\n').some((l) => /^\s*\d{6}\s*$/.test(l))).toBe(false)
    expect(mail.html).not.toMatch(/\b\d{6}\b/)

    // No code exists that could complete a second signup for this address.
    const row = await app.deps.db.get(sql`SELECT inert, code_hash FROM email_codes WHERE purpose = 'signup' AND email = ${email}`)
    expect(row).toEqual({ inert: 1, code_hash: null })
    for (const code of ['000000', '123456', '999999']) await expectProblem(await post(app, '/auth/signup/verify', { email, code }), 401, 'unauthorized')
  })

  test('a ticket completes one signup only', async () => {
    const email = newEmail()
    const ticket = await verifyCode(app, 'signup', email, await requestCode(app, 'signup', email))
    expect((await post(app, '/auth/signup/complete', { ticket, password: GOOD_PASSWORD })).status).toBe(201)
    const tenants = await app.deps.db.get(sql`SELECT count(*) AS n FROM tenants`)
    await expectProblem(await post(app, '/auth/signup/complete', { ticket, password: 'another fine password' }), 401, 'unauthorized')
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM tenants`)).toEqual(tenants)
  })

  test('a code is single-use: verifying it a second time answers 401', async () => {
    const email = newEmail()
    const code = await requestCode(app, 'signup', email)
    await verifyCode(app, 'signup', email, code)
    await expectProblem(await post(app, '/auth/signup/verify', { email, code }), 401, 'unauthorized')
  })

  test('a ticket expires 10 minutes after verify', async () => {
    const email = newEmail()
    const fresh = await verifyCode(app, 'signup', email, await requestCode(app, 'signup', email))
    await advance(app, 601)
    await expectProblem(await post(app, '/auth/signup/complete', { ticket: fresh, password: GOOD_PASSWORD }), 401, 'unauthorized')
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM users WHERE email = ${email}`)).toEqual({ n: 0 })
  })

  test('a ticket still works 9 minutes after verify', async () => {
    const email = newEmail()
    const ticket = await verifyCode(app, 'signup', email, await requestCode(app, 'signup', email))
    await advance(app, 540)
    expect((await post(app, '/auth/signup/complete', { ticket, password: GOOD_PASSWORD })).status).toBe(201)
  })

  test('a second pending signup for an address that meanwhile got an account answers 409', async () => {
    const email = newEmail()
    const first = await verifyCode(app, 'signup', email, await requestCode(app, 'signup', email))
    await advance(app, 61)
    const second = await verifyCode(app, 'signup', email, await requestCode(app, 'signup', email))
    expect((await post(app, '/auth/signup/complete', { ticket: first, password: GOOD_PASSWORD })).status).toBe(201)
    await expectProblem(await post(app, '/auth/signup/complete', { ticket: second, password: GOOD_PASSWORD }), 409, 'conflict')
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM users WHERE email = ${email}`)).toEqual({ n: 1 })
  })

  test('a second start inside 60 seconds answers 429 with Retry-After; after 60 seconds a new code comes and the old one is dead', async () => {
    const email = newEmail('resend')
    const oldCode = await requestCode(app, 'signup', email)

    const early = await post(app, '/auth/signup/start', { email, tenant_name: 'Acme GPUs' })
    const retryAfter = Number(early.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    await expectProblem(early, 429, 'rate_limited')
    await app.deps.mail.dispatchDue()
    expect(app.smtp.to(email)).toHaveLength(1)

    await advance(app, 60)
    let newCode = await requestCode(app, 'signup', email)
    // The CSPRNG may repeat a 6-digit code; ask again (after another cooldown) until it differs.
    while (newCode === oldCode) {
      await advance(app, 60)
      newCode = await requestCode(app, 'signup', email)
    }
    await expectProblem(await post(app, '/auth/signup/verify', { email, code: oldCode }), 401, 'unauthorized')
    expect(await verifyCode(app, 'signup', email, newCode)).toBeString()
  })

  test('start refuses a malformed email, a missing tenant name and unknown fields with 422', async () => {
    const cases = [
      { email: 'not-an-email', tenant_name: 'x' },
      { email: `${'a'.repeat(250)}@x.io`, tenant_name: 'x' },
      { email: newEmail() },
      { email: newEmail(), tenant_name: '' },
      { email: newEmail(), tenant_name: 'x'.repeat(129) },
      { email: newEmail(), tenant_name: 'x', role: 'admin' },
    ]
    for (const body of cases) {
      const p = await expectProblem(await post(app, '/auth/signup/start', body), 422, 'validation_failed')
      expect(p.errors!.length).toBeGreaterThan(0)
    }
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM email_codes WHERE email NOT LIKE ${'%@example.test'}`)).toEqual({ n: 0 })
  })

  test('verify refuses a code that is not exactly 6 digits with 422', async () => {
    for (const code of ['12345', '1234567', 'abcdef', ' 12345'])
      await expectProblem(await post(app, '/auth/signup/verify', { email: newEmail(), code }), 422, 'validation_failed')
  })

  test('the owner can sign in with the password chosen at signup', async () => {
    const account = await signUp(app)
    const res = await signIn(app, account.email, account.password)
    expect(res.status).toBe(201)
    expect(await res.json()).toMatchObject({ id: account.me.id, role: 'owner' })
  })
})
