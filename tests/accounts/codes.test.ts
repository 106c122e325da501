import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createHash } from 'node:crypto'
import { advance, newEmail, post, requestCode, signUp, stableBody, stableHeaders, startAccountsApp, verifyCode, type AccountsApp } from '../support/accounts'
import { expectProblem } from '../support/problem'

/**
 * Emailed codes (docs/auth.md "Codes and tickets": 6 digits, valid 10 minutes, 5 entry attempts):
 * wrong, expired, exhausted and never-issued codes answer the identical 401; codes are stored only
 * as a keyed hash and are bound to their purpose.
 */

let app: AccountsApp
beforeAll(async () => {
  app = await startAccountsApp()
})
afterAll(() => app.stop())
beforeEach(() => advance(app, 3600))

const verify = (email: string, code: string, kind: 'signup' | 'reset' = 'signup') =>
  post(app, kind === 'signup' ? '/auth/signup/verify' : '/auth/password-reset/verify', { email, code })

/** A code guaranteed different from `code`. */
const other = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0')

/** The failing answer as status + headers + body without request_id (instance is the path, the same for all). */
async function failure(res: Response) {
  return { status: res.status, headers: stableHeaders(res), body: await stableBody(res) }
}

describe('codes', () => {
  test('wrong, expired, exhausted and never-issued codes all answer the same 401, byte for byte apart from request_id', async () => {
    const wrongEmail = newEmail('wrong')
    const wrongCode = await requestCode(app, 'signup', wrongEmail)
    const wrong = await failure(await verify(wrongEmail, other(wrongCode)))

    const expiredEmail = newEmail('expired')
    const expiredCode = await requestCode(app, 'signup', expiredEmail)
    await advance(app, 601)
    const expired = await failure(await verify(expiredEmail, expiredCode))

    const exhaustedEmail = newEmail('exhausted')
    const exhaustedCode = await requestCode(app, 'signup', exhaustedEmail)
    for (let i = 0; i < 5; i++) expect((await verify(exhaustedEmail, other(exhaustedCode))).status).toBe(401)
    const exhausted = await failure(await verify(exhaustedEmail, exhaustedCode))

    const never = await failure(await verify(newEmail('never'), '123456'))

    expect(wrong.status).toBe(401)
    expect(expired).toEqual(wrong)
    expect(exhausted).toEqual(wrong)
    expect(never).toEqual(wrong)
    const doc = JSON.parse(wrong.body)
    expect(doc).toMatchObject({ code: 'unauthorized', status: 401, instance: '/api/v1/auth/signup/verify' })
  })

  test('the same holds on the password-reset verify', async () => {
    const { email } = await signUp(app)
    const code = await requestCode(app, 'reset', email)
    const wrong = await failure(await verify(email, other(code), 'reset'))
    const never = await failure(await verify(newEmail('nobody'), '654321', 'reset'))
    await advance(app, 601)
    const expired = await failure(await verify(email, code, 'reset'))
    expect(wrong.status).toBe(401)
    expect(never).toEqual(wrong)
    expect(expired).toEqual(wrong)
  })

  test('four wrong tries leave the code usable; the fifth wrong try kills it', async () => {
    const alive = newEmail('four-wrong')
    const aliveCode = await requestCode(app, 'signup', alive)
    for (let i = 0; i < 4; i++) await expectProblem(await verify(alive, other(aliveCode)), 401, 'unauthorized')
    expect(await verifyCode(app, 'signup', alive, aliveCode)).toBeString()

    const dead = newEmail('five-wrong')
    const deadCode = await requestCode(app, 'signup', dead)
    for (let i = 0; i < 5; i++) await expectProblem(await verify(dead, other(deadCode)), 401, 'unauthorized')
    await expectProblem(await verify(dead, deadCode), 401, 'unauthorized')
  })

  test('a code is valid for 10 minutes: at 9 minutes 50 seconds it still works', async () => {
    const email = newEmail('nearly-expired')
    const code = await requestCode(app, 'signup', email)
    await advance(app, 590)
    expect(await verifyCode(app, 'signup', email, code)).toBeString()
  })

  test('a new code after an exhausted one starts with a fresh count of attempts', async () => {
    const email = newEmail('fresh-count')
    const first = await requestCode(app, 'signup', email)
    for (let i = 0; i < 5; i++) await verify(email, other(first))
    await advance(app, 60)
    const second = await requestCode(app, 'signup', email)
    expect(await verifyCode(app, 'signup', email, second)).toBeString()
  })

  test('the code is kept only as a keyed hash in the codes table, and the log never shows it', async () => {
    const email = newEmail('hashed')
    const code = await requestCode(app, 'signup', email)
    const row = (await app.deps.db.get(sql`SELECT * FROM email_codes WHERE purpose = 'signup' AND email = ${email}`)) as Record<string, unknown>
    expect(row.code_hash).toMatch(/^[0-9a-f]{64}$/)
    // Not a plain (unkeyed) hash of the code either.
    for (const plain of [code, `signup\n${code}`]) expect(row.code_hash).not.toBe(createHash('sha256').update(plain).digest('hex'))
    for (const value of Object.values(row)) if (typeof value === 'string') expect(value.includes(code)).toBe(false)
    expect(app.rawLogs.some((l) => l.includes(code))).toBe(false)
  })

  test('codes are purpose-scoped: a signup code does not verify a password reset, nor a reset code a signup', async () => {
    // An account that also has a pending signup code is impossible (taken emails get no code), so
    // the signup code belongs to a free address and the reset code to an account.
    const free = newEmail('signup-code')
    const signupCode = await requestCode(app, 'signup', free)
    await expectProblem(await verify(free, signupCode, 'reset'), 401, 'unauthorized')

    const { email } = await signUp(app)
    const resetCode = await requestCode(app, 'reset', email)
    await expectProblem(await verify(email, resetCode, 'signup'), 401, 'unauthorized')

    // Each still works where it belongs.
    expect(await verifyCode(app, 'signup', free, signupCode)).toBeString()
    expect(await verifyCode(app, 'reset', email, resetCode)).toBeString()
  })

  test('codes are six digits spread over the whole range, not a counter or a fixed value', async () => {
    const codes: string[] = []
    for (let i = 0; i < 8; i++) codes.push(await requestCode(app, 'signup', newEmail('spread')))
    for (const c of codes) expect(c).toMatch(/^\d{6}$/)
    expect(new Set(codes).size).toBeGreaterThanOrEqual(7)
    const sorted = codes.map(Number).sort((a, b) => a - b)
    expect(sorted.some((n, i) => i > 0 && n - sorted[i - 1]! > 1)).toBe(true)
  })
})
