import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createHash } from 'node:crypto'
import {
  advance,
  getMe,
  SESSION_COOKIE,
  sessionFrom,
  signIn,
  signUp,
  stableBody,
  startAccountsApp,
  withSession,
  type Account,
  type AccountsApp,
} from '../support/accounts'
import { expectProblem } from '../support/problem'

/**
 * Browser sessions (docs/auth.md "Sessions").
 */

const signOut = (app: AccountsApp, token: string) => app.fetch('/api/v1/auth/sessions/current', { method: 'DELETE', headers: withSession(token) })

describe('sessions with the default lifetimes', () => {
  let app: AccountsApp
  let account: Account
  beforeAll(async () => {
    app = await startAccountsApp()
    account = await signUp(app)
  })
  afterAll(() => app.stop())

  test('sign-in answers 201 with the profile and a __Host- cookie: Secure, HttpOnly, SameSite=Lax, Path=/, no Domain', async () => {
    const res = await signIn(app, account.email, account.password)
    expect(res.status).toBe(201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const header = res.headers.get('set-cookie')!
    expect(header).toMatch(/^__Host-gpuhq_session=[A-Za-z0-9_-]{43}; Path=\/; Secure; HttpOnly; SameSite=Lax; Max-Age=2592000$/)
    expect(header.toLowerCase()).not.toContain('domain=')
    expect(header.split(';')[0]!.length).toBeLessThanOrEqual(4096)
    // 43 base64url characters carry 256 random bits.
    expect(Buffer.from(sessionFrom(res)!, 'base64url').length).toBe(32)
    expect(await res.json()).toMatchObject({ id: account.me.id, email: account.email, role: 'owner', tenant_id: account.me.tenant_id })
  })

  test('the session lasts 7 days idle and 30 days at most by default', async () => {
    const token = sessionFrom(await signIn(app, account.email, account.password))!
    const row = (await app.deps.db.get(
      sql`SELECT created_at, idle_expires_at, absolute_expires_at FROM sessions WHERE token_hash = ${createHash('sha256').update(token).digest('hex')}`,
    )) as Record<string, number>
    expect(row.idle_expires_at - row.created_at).toBe(7 * 86400 * 1e6)
    expect(row.absolute_expires_at - row.created_at).toBe(30 * 86400 * 1e6)
  })

  test('the token is stored only as its SHA-256 hash', async () => {
    const token = sessionFrom(await signIn(app, account.email, account.password))!
    const rows = (await app.deps.db.all(sql`SELECT * FROM sessions`)) as Record<string, unknown>[]
    for (const row of rows) for (const v of Object.values(row)) if (typeof v === 'string') expect(v.includes(token)).toBe(false)
    expect(rows.some((r) => r.token_hash === createHash('sha256').update(token).digest('hex'))).toBe(true)
  })

  test('every sign-in hands out a new token, even when the request already carries one', async () => {
    const first = sessionFrom(await signIn(app, account.email, account.password))!
    const second = sessionFrom(await signIn(app, account.email, account.password, withSession(first)))!
    const third = sessionFrom(await signIn(app, account.email, account.password))!
    expect(new Set([first, second, third]).size).toBe(3)
    for (const t of [second, third]) expect((await getMe(app, t)).status).toBe(200)
  })

  test('a session cookie that was never handed out answers 401, like no cookie at all', async () => {
    const none = await expectProblem(await app.fetch('/api/v1/me'), 401, 'unauthorized')
    const madeUp = await expectProblem(await getMe(app, 'A'.repeat(43)), 401, 'unauthorized')
    const tooLong = await expectProblem(await getMe(app, 'A'.repeat(5000)), 401, 'unauthorized')
    expect(madeUp.detail).toBe(none.detail)
    expect(tooLong.detail).toBe(none.detail)
  })

  test('signing out answers 204, clears the cookie and deletes the session server-side: the old cookie then gets 401', async () => {
    const token = sessionFrom(await signIn(app, account.email, account.password))!
    const other = sessionFrom(await signIn(app, account.email, account.password))!
    const before = (await app.deps.db.get(sql`SELECT count(*) AS n FROM sessions`)) as { n: number }

    const out = await signOut(app, token)
    expect(out.status).toBe(204)
    expect(out.headers.get('set-cookie')).toBe(`${SESSION_COOKIE}=; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=0`)
    expect(await out.text()).toBe('')
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM sessions`)).toEqual({ n: before.n - 1 })

    await expectProblem(await getMe(app, token), 401, 'unauthorized')
    await expectProblem(await signOut(app, token), 401, 'unauthorized')
    // Only that session ended.
    expect((await getMe(app, other)).status).toBe(200)
  })

  test('signing out without a session answers 401', async () => {
    await expectProblem(await app.fetch('/api/v1/auth/sessions/current', { method: 'DELETE' }), 401, 'unauthorized')
  })

  test('a wrong password answers 401 and sets no cookie', async () => {
    const res = await signIn(app, account.email, 'not the password at all')
    expect(res.headers.get('set-cookie')).toBeNull()
    await expectProblem(res, 401, 'unauthorized')
  })
})

describe('session expiry (SESSION_IDLE_SECONDS=600, SESSION_ABSOLUTE_SECONDS=1500)', () => {
  let app: AccountsApp
  let account: Account
  beforeAll(async () => {
    app = await startAccountsApp({ SESSION_IDLE_SECONDS: '600', SESSION_ABSOLUTE_SECONDS: '1500' })
    account = await signUp(app)
  })
  afterAll(() => app.stop())

  const fresh = async () => sessionFrom(await signIn(app, account.email, account.password))!

  test('the cookie lives as long as the absolute lifetime', async () => {
    const res = await signIn(app, account.email, account.password)
    expect(res.headers.get('set-cookie')).toEndWith('; Max-Age=1500')
  })

  test('a session unused for longer than the idle time is over, and its row is gone', async () => {
    const token = await fresh()
    await advance(app, 601)
    const expired = await expectProblem(await getMe(app, token), 401, 'unauthorized')
    const unknown = await expectProblem(await getMe(app, 'B'.repeat(43)), 401, 'unauthorized')
    expect(expired.detail).toBe(unknown.detail)
    const hash = createHash('sha256').update(token).digest('hex')
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM sessions WHERE token_hash = ${hash}`)).toEqual({ n: 0 })
  })

  test('use keeps a session alive past the idle time, but never past the absolute lifetime', async () => {
    const token = await fresh()
    await advance(app, 500)
    expect((await getMe(app, token)).status).toBe(200)
    await advance(app, 500)
    expect((await getMe(app, token)).status).toBe(200) // 1000 s old: alive only because it was used
    await advance(app, 400)
    expect((await getMe(app, token)).status).toBe(200) // 1400 s old
    await advance(app, 101)
    await expectProblem(await getMe(app, token), 401, 'unauthorized') // 1501 s: absolute limit
  })

  test('a session used just before its idle time runs out lives on', async () => {
    const token = await fresh()
    await advance(app, 590)
    expect((await getMe(app, token)).status).toBe(200)
    await advance(app, 590)
    expect((await getMe(app, token)).status).toBe(200)
  })

  test('an expired session answers the same 401 body as no session', async () => {
    const token = await fresh()
    await advance(app, 1501)
    const a = await stableBody(await getMe(app, token))
    const b = await stableBody(await app.fetch('/api/v1/me'))
    expect(a).toBe(b)
  })
})
