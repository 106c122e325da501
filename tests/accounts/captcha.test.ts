import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { advance, allRowCounts, newEmail, post, signUp, stableBody, startAccountsApp, type Account, type AccountsApp } from '../support/accounts'
import { closedPortUrl, startFakeCaptcha, type FakeCaptcha } from '../support/captcha'
import { expectProblem } from '../support/problem'

/**
 * Captcha (docs/auth.md "Captcha"): with a secret configured, signup start, reset start and sign-in
 * need a token checked against the Turnstile-compatible siteverify URL; missing, rejected or
 * unverifiable (network error, timeout, non-2xx) all answer 403 forbidden "captcha verification
 * failed". Fail closed.
 */

const DETAIL = 'captcha verification failed'
const GUARDED = ['signup start', 'reset start', 'sign-in'] as const
type Guarded = (typeof GUARDED)[number]

let tokenSeq = 0
const newToken = () => `turnstile-token-${Date.now()}-${++tokenSeq}`

function call(app: AccountsApp, op: Guarded, token: string | null | undefined, account?: Account) {
  const captcha = token === undefined ? {} : { captcha_token: token }
  if (op === 'signup start') return post(app, '/auth/signup/start', { email: newEmail('cap'), tenant_name: 'T', ...captcha })
  if (op === 'reset start') return post(app, '/auth/password-reset/start', { email: account?.email ?? newEmail('cap'), ...captcha })
  return post(app, '/auth/sessions', { email: account!.email, password: account!.password, ...captcha })
}

async function expectCaptchaFailure(res: Response) {
  const p = await expectProblem(res, 403, 'forbidden')
  expect(p.detail).toBe(DETAIL)
}

const SUCCESS: Record<Guarded, number> = { 'signup start': 202, 'reset start': 202, 'sign-in': 201 }

describe('captcha against a Turnstile-compatible verifier', () => {
  let captcha: FakeCaptcha
  let app: AccountsApp
  let account: Account
  beforeAll(async () => {
    captcha = await startFakeCaptcha('accept')
    app = await startAccountsApp({ CAPTCHA_SECRET: captcha.secret, CAPTCHA_SITE_KEY: '0x4AAAAAAA-site-key', CAPTCHA_VERIFY_URL: captcha.url })
    // The account is made while the verifier accepts every token.
    const email = newEmail('captcha-owner')
    expect((await post(app, '/auth/signup/start', { email, tenant_name: 'T', captcha_token: newToken() })).status).toBe(202)
    account = await signUpWithCaptcha(app, email)
  })
  afterAll(async () => {
    await app.stop()
    await captcha.close()
  })
  beforeEach(async () => {
    captcha.mode('accept')
    await advance(app, 3600)
  })

  test('/auth/config says the captcha is on, with the provider and the public site key', async () => {
    expect(((await (await app.fetch('/api/v1/auth/config')).json()) as { captcha: unknown }).captcha).toEqual({
      enabled: true,
      provider: 'turnstile',
      site_key: '0x4AAAAAAA-site-key',
    })
  })

  for (const op of GUARDED) {
    test(`${op} without a token, with null or with an empty token answers 403 "captcha verification failed" without asking the verifier`, async () => {
      const calls = captcha.calls.length
      for (const token of [undefined, null, '']) await expectCaptchaFailure(await call(app, op, token, account))
      expect(captcha.calls.length).toBe(calls)
    })

    test(`${op} with a token the verifier rejects answers 403 "captcha verification failed"`, async () => {
      captcha.mode('reject')
      await expectCaptchaFailure(await call(app, op, newToken(), account))
    })

    test(`${op} with a verifier answering 500 answers 403 "captcha verification failed"`, async () => {
      captcha.mode('error')
      await expectCaptchaFailure(await call(app, op, newToken(), account))
    })

    test(`${op} with an accepted token succeeds once, and the same token replayed fails`, async () => {
      const token = newToken()
      expect((await call(app, op, token, account)).status).toBe(SUCCESS[op])
      const calls = captcha.calls.length
      await advance(app, 61)
      await expectCaptchaFailure(await call(app, op, token, account))
      // The replay is refused here; the verifier (which would accept it) is not even asked.
      expect(captcha.calls.length).toBe(calls)
    })
  }

  test('the verifier is asked with the secret, the token and the client address, as a form post', async () => {
    const token = newToken()
    await call(app, 'reset start', token, account)
    expect(captcha.calls.at(-1)).toEqual({ secret: captcha.secret, response: token, remoteip: '127.0.0.1', contentType: 'application/x-www-form-urlencoded' })
  })

  test('a token over 2048 characters is refused by validation', async () => {
    await expectProblem(await call(app, 'reset start', 'x'.repeat(2049), account), 422, 'validation_failed')
  })

  test('a refused captcha writes no code and sends no mail', async () => {
    captcha.mode('reject')
    const before = await allRowCounts(app)
    const email = newEmail('no-trace')
    await expectCaptchaFailure(await post(app, '/auth/signup/start', { email, tenant_name: 'T', captcha_token: newToken() }))
    const after = await allRowCounts(app)
    expect(after.email_codes).toBe(before.email_codes!)
    expect(after.mail_outbox).toBe(before.mail_outbox!)
    await app.deps.mail.dispatchDue()
    expect(app.smtp.to(email)).toHaveLength(0)
  })

  test('the 403 body does not depend on the credentials: a right and a wrong password get the same answer', async () => {
    captcha.mode('reject')
    const right = await stableBody(await post(app, '/auth/sessions', { email: account.email, password: account.password, captcha_token: newToken() }))
    const wrong = await stableBody(await post(app, '/auth/sessions', { email: account.email, password: 'not it at all', captcha_token: newToken() }))
    const unknown = await stableBody(await post(app, '/auth/sessions', { email: newEmail('x'), password: 'not it at all', captcha_token: newToken() }))
    expect(wrong).toBe(right)
    expect(unknown).toBe(right)
  })

  test('verify and complete take no captcha token: a verify without one is judged on its code alone', async () => {
    // signUpWithCaptcha in beforeAll verified and completed without tokens; a wrong code is a 401, not a 403.
    await expectProblem(await post(app, '/auth/password-reset/verify', { email: account.email, code: '000000' }), 401, 'unauthorized')
    await expectProblem(await post(app, '/auth/password-reset/complete', { ticket: 'made-up-ticket', password: 'long enough passphrase' }), 401, 'unauthorized')
  })

  test('a verifier that never answers is given up after the 5 s timeout: 403, fail closed', async () => {
    captcha.mode('slow')
    const started = performance.now()
    await expectCaptchaFailure(await call(app, 'signup start', newToken()))
    const took = performance.now() - started
    expect(took).toBeGreaterThanOrEqual(4900)
    expect(took).toBeLessThan(7000)
  }, 10_000)
})

describe('captcha with a verifier that cannot be reached', () => {
  let app: AccountsApp
  let account: Account
  beforeAll(async () => {
    const url = await closedPortUrl()
    app = await startAccountsApp({ CAPTCHA_SECRET: 'some-secret', CAPTCHA_VERIFY_URL: url })
    // The account is made without a captcha (another app over the same database, captcha off).
    const { startTestApp } = await import('../support/app')
    const open = await startTestApp({ SIGNUP_ENABLED: 'true', DATABASE_URL: app.databaseUrl, SMTP_URL: app.smtp.url })
    try {
      account = await signUp(Object.assign(open, { smtp: app.smtp, stop: async () => {} }))
    } finally {
      await open.deps.mail.idle()
      await open.close()
    }
  })
  afterAll(() => app.stop())

  for (const op of GUARDED)
    test(`${op} answers 403 "captcha verification failed" when the verifier is unreachable`, async () => {
      await expectCaptchaFailure(await call(app, op, newToken(), account))
    })
})

/** Finishes a signup whose start already went through (verify and complete take no captcha). */
async function signUpWithCaptcha(app: AccountsApp, email: string): Promise<Account> {
  const { mailTo } = await import('../support/accounts')
  const { codeFrom } = await import('../support/smtp')
  const code = codeFrom(await mailTo(app, email))
  const { ticket } = (await (await post(app, '/auth/signup/verify', { email, code })).json()) as { ticket: string }
  const res = await post(app, '/auth/signup/complete', { ticket, password: 'captcha owner passphrase' })
  expect(res.status).toBe(201)
  const token = /__Host-gpuhq_session=([^;]+)/.exec(res.headers.get('set-cookie')!)![1]!
  return { email, password: 'captcha owner passphrase', token, me: (await res.json()) as Account['me'] }
}
