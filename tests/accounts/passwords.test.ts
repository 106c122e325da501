import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { advance, newEmail, post, requestCode, signIn, signUp, startAccountsApp, verifyCode, type AccountsApp } from '../support/accounts'
import { expectProblem } from '../support/problem'

/**
 * Passwords (docs/auth.md "Passwords"): argon2id at m=19 MiB, t=2, p=1; 8 to 256 characters counted
 * as Unicode code points; never truncated or normalised; no composition rules; the most common
 * passwords refused with a clear 422.
 */

let app: AccountsApp
beforeAll(async () => {
  app = await startAccountsApp()
})
afterAll(() => app.stop())
beforeEach(() => advance(app, 3600))

async function signupTicket(): Promise<{ email: string; ticket: string }> {
  const email = newEmail('pw')
  return { email, ticket: await verifyCode(app, 'signup', email, await requestCode(app, 'signup', email)) }
}

const complete = (ticket: string, password: string) => post(app, '/auth/signup/complete', { ticket, password })

/** Exactly `n` code points cycling through `pieces`' code points. */
function codePoints(n: number, pieces: string): string {
  const cps = [...pieces]
  return Array.from({ length: n }, (_, i) => cps[i % cps.length]).join('')
}

// Decomposed accents (e + U+0301), a ZWJ emoji sequence, a skin-tone modifier, Cyrillic, CJK and a
// dragon from the astral plane: NFC changes it, and UTF-16 length differs from code points.
const UNICODE_PIECES = 'Ще\u0301дрый 🐉 caf\u0065\u0301 👩\u200d💻👍🏽 密码 Ω≈ç√ '

describe('passwords', () => {
  test('7 characters are too short, 257 too long, and common passwords are refused, each with a clear 422; 256 characters are accepted', async () => {
    const { email, ticket } = await signupTicket()
    const cases: [string, string][] = [
      ['x7!kQz2', 'too_short'],
      ['🐉🐉🐉🐉', 'too_short'], // 8 UTF-16 units but only 4 characters
      [codePoints(257, 'abcdefgh'), 'too_long'],
      [codePoints(257, '🐉'), 'too_long'],
      ['password123', 'too_common'],
      ['PASSWORD123', 'too_common'],
      ['iloveyou', 'too_common'],
      ['qwerty123', 'too_common'],
      ['trustno1', 'too_common'],
    ]
    for (const [password, code] of cases) {
      const p = await expectProblem(await complete(ticket, password), 422, 'validation_failed')
      expect({ password, errors: p.errors }).toEqual({ password, errors: [{ path: '/password', code }] })
      expect(p.detail!.length).toBeGreaterThan(10)
    }
    // None of the refusals used the ticket up; 256 emoji (1024 bytes of UTF-8) are accepted.
    const longest = codePoints(256, '🐉')
    expect((await complete(ticket, longest)).status).toBe(201)
    expect((await signIn(app, email, longest)).status).toBe(201)
  })

  test('exactly 8 characters of any kind are accepted: no composition rules', async () => {
    const { email, ticket } = await signupTicket()
    expect((await complete(ticket, 'zqxjvkwp')).status).toBe(201)
    expect((await signIn(app, email, 'zqxjvkwp')).status).toBe(201)
  })

  test('the refusal messages name the rule', async () => {
    const { ticket } = await signupTicket()
    expect((await expectProblem(await complete(ticket, 'short'), 422, 'validation_failed')).detail).toContain('at least 8')
    expect((await expectProblem(await complete(ticket, 'a'.repeat(300)), 422, 'validation_failed')).detail).toContain('at most 256')
    expect((await expectProblem(await complete(ticket, 'password123'), 422, 'validation_failed')).detail).toContain('most common')
  })

  for (const length of [64, 200])
    test(`a ${length}-character Unicode password round-trips exactly; normalised or truncated forms do not sign in`, async () => {
      const password = codePoints(length, UNICODE_PIECES)
      expect([...password].length).toBe(length)
      expect(password.normalize('NFC')).not.toBe(password)
      const account = await signUp(app, newEmail('unicode'), password)

      const variants: Record<string, string> = {
        NFC: password.normalize('NFC'),
        NFKC: password.normalize('NFKC'),
        'one character fewer': [...password].slice(0, length - 1).join(''),
        'the first 72 UTF-8 bytes': new TextDecoder().decode(new TextEncoder().encode(password).slice(0, 72)).replace(/\uFFFD$/, ''),
        'upper case': password.toUpperCase(),
        'trailing space trimmed': password.trimEnd(),
      }
      if (length > 128) variants['the first 128 characters'] = [...password].slice(0, 128).join('')
      let failures = 0
      for (const [what, variant] of Object.entries(variants)) {
        if (variant === password) continue
        const res = await signIn(app, account.email, variant)
        expect({ what, status: res.status }).toEqual({ what, status: 401 })
        // A correct sign-in between every few failures keeps the backoff out of this test.
        if (++failures % 4 === 0) expect((await signIn(app, account.email, password)).status).toBe(201)
      }
      expect((await signIn(app, account.email, password)).status).toBe(201)
    })

  test('the stored hash is argon2id with m=19456, t=2, p=1 and a fresh salt per account', async () => {
    const a = await signUp(app, newEmail('hash-a'), 'the very same passphrase')
    const b = await signUp(app, newEmail('hash-b'), 'the very same passphrase')
    const hashOf = async (email: string) => ((await app.deps.db.get(sql`SELECT password_hash AS h FROM users WHERE email = ${email}`)) as { h: string }).h
    const ha = await hashOf(a.email)
    const hb = await hashOf(b.email)
    expect(ha.startsWith('$argon2id$v=19$m=19456,t=2,p=1$')).toBe(true)
    expect(hb.startsWith('$argon2id$v=19$m=19456,t=2,p=1$')).toBe(true)
    expect(ha).not.toBe(hb)
    expect(ha).not.toContain('the very same passphrase')
  })

  test('a password change by reset is checked by the same rules', async () => {
    const { email } = await signUp(app)
    const ticket = await verifyCode(app, 'reset', email, await requestCode(app, 'reset', email))
    for (const [password, code] of [
      ['seven77', 'too_short'],
      ['x'.repeat(257), 'too_long'],
      ['letmein1', 'too_common'],
    ] as const) {
      const p = await expectProblem(await post(app, '/auth/password-reset/complete', { ticket, password }), 422, 'validation_failed')
      expect(p.errors).toEqual([{ path: '/password', code }])
    }
  })
})
