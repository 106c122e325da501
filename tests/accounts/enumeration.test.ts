import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { advance, newEmail, post, signIn, signUp, stableBody, stableHeaders, startAccountsApp, type Account, type AccountsApp } from '../support/accounts'

/**
 * Anti-enumeration (docs/auth.md "Signup", "Codes and tickets", "Password reset", "Sessions"):
 * nothing in status, headers, body or cooldown tells whether an email has an account. Timing is
 * measured in timing.test.ts.
 */

let app: AccountsApp
let account: Account
beforeAll(async () => {
  app = await startAccountsApp()
  account = await signUp(app)
  await advance(app, 61)
})
afterAll(() => app.stop())
beforeEach(() => advance(app, 3600))

async function answer(res: Response) {
  return { status: res.status, headers: stableHeaders(res), body: await stableBody(res) }
}

describe('answers that do not tell whether an account exists', () => {
  test('signup start for a taken and a free email: same status, headers, body and cooldown', async () => {
    const taken = account.email
    const free = newEmail('free')
    const a = await answer(await post(app, '/auth/signup/start', { email: taken, tenant_name: 'Same Name' }))
    const b = await answer(await post(app, '/auth/signup/start', { email: free, tenant_name: 'Same Name' }))
    expect(a.status).toBe(202)
    expect(b).toEqual(a)

    await advance(app, 30)
    const ca = await post(app, '/auth/signup/start', { email: taken, tenant_name: 'Same Name' })
    const cb = await post(app, '/auth/signup/start', { email: free, tenant_name: 'Same Name' })
    expect(ca.status).toBe(429)
    expect(cb.status).toBe(429)
    expect(Math.abs(Number(ca.headers.get('retry-after')) - Number(cb.headers.get('retry-after')))).toBeLessThanOrEqual(1)
    expect(await answer(cb)).toEqual(await answer(ca))

    await advance(app, 30)
    expect((await post(app, '/auth/signup/start', { email: taken, tenant_name: 'Same Name' })).status).toBe(202)
    expect((await post(app, '/auth/signup/start', { email: free, tenant_name: 'Same Name' })).status).toBe(202)
  })

  test('signup start only queues its mail, so a refusing mail server changes nothing in the answer for either kind of address', async () => {
    app.smtp.refuse(true)
    try {
      const free = newEmail('free-queued')
      await advance(app, 61)
      const answers = []
      for (const [email, template] of [
        [account.email, 'signup_taken'],
        [free, 'signup_code'],
      ] as const) {
        answers.push(await answer(await post(app, '/auth/signup/start', { email, tenant_name: 'T' })))
        const row = (await app.deps.db.get(sql`SELECT template FROM mail_outbox WHERE "to" = ${email} ORDER BY created_at DESC`)) as { template: string }
        expect(row.template).toBe(template)
      }
      expect(answers[0]!.status).toBe(202)
      expect(answers[1]).toEqual(answers[0]!)
    } finally {
      app.smtp.refuse(false)
      await app.deps.mail.idle()
    }
  })

  test('password-reset start for a known and an unknown email: same status, headers, body and cooldown', async () => {
    const unknown = newEmail('unknown')
    const a = await answer(await post(app, '/auth/password-reset/start', { email: account.email }))
    const b = await answer(await post(app, '/auth/password-reset/start', { email: unknown }))
    expect(a.status).toBe(202)
    expect(b).toEqual(a)

    const ca = await answer(await post(app, '/auth/password-reset/start', { email: account.email }))
    const cb = await answer(await post(app, '/auth/password-reset/start', { email: unknown }))
    expect(ca.status).toBe(429)
    expect(cb.status).toBe(429)
  })

  test('sign-in with a wrong password and with an unknown email: same status, headers and body', async () => {
    const wrong = await signIn(app, account.email, 'definitely not the password')
    const unknown = await signIn(app, newEmail('nobody'), 'definitely not the password')
    const a = await answer(wrong)
    const b = await answer(unknown)
    expect(a.status).toBe(401)
    expect(a.headers['set-cookie']).toBeUndefined()
    expect(b).toEqual(a)
  })

  test('an account without a password yet (made by the operator) answers sign-in like any wrong password', async () => {
    const now = app.deps.clock.nowUs()
    const email = newEmail('no-password')
    await app.deps.db.run(
      sql`INSERT INTO users (id, tenant_id, email, password_hash, role, timezone, locale, created_at, updated_at) VALUES (${app.deps.newId()}, ${account.me.tenant_id}, ${email}, NULL, ${'viewer'}, ${'UTC'}, ${'en'}, ${now}, ${now})`,
    )
    const a = await answer(await signIn(app, email, 'any password at all'))
    const b = await answer(await signIn(app, newEmail('nobody'), 'any password at all'))
    expect(a.status).toBe(401)
    expect(b).toEqual(a)
  })

  test('verify for a taken email (no code was ever sent), a free email with a wrong code and an email never seen: same 401', async () => {
    const free = newEmail('free-verify')
    await advance(app, 61)
    expect((await post(app, '/auth/signup/start', { email: account.email, tenant_name: 'T' })).status).toBe(202)
    expect((await post(app, '/auth/signup/start', { email: free, tenant_name: 'T' })).status).toBe(202)
    const a = await answer(await post(app, '/auth/signup/verify', { email: account.email, code: '111111' }))
    const b = await answer(await post(app, '/auth/signup/verify', { email: newEmail('never'), code: '111111' }))
    // '111111' might be the free address's real code once in a million runs; use its neighbour then.
    const c = await answer(await post(app, '/auth/signup/verify', { email: free, code: '111112' }))
    expect(a.status).toBe(401)
    expect(b).toEqual(a)
    expect(c.status === 200 || JSON.stringify(c) === JSON.stringify(a)).toBe(true)
  })
})
