import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { TEST_PUBLIC_URL } from '../support/app'
import { getMe, signUp, startAccountsApp, withSession, type Account, type AccountsApp, type Me } from '../support/accounts'
import { expectProblem } from '../support/problem'

/**
 * CSRF (docs/auth.md "CSRF"): a cookie-authenticated unsafe request is refused with 403
 * csrf_rejected when Sec-Fetch-Site is cross-site, or when Origin is present and differs from
 * PUBLIC_URL (http://gpuhq.test in tests). Safe methods are never refused.
 */

let app: AccountsApp
let account: Account
beforeAll(async () => {
  app = await startAccountsApp()
  account = await signUp(app)
})
afterAll(() => app.stop())

const patchMe = (headers: Record<string, string>, body: unknown = { display_name: 'Changed' }) =>
  app.fetch('/api/v1/me', { method: 'PATCH', json: body, headers: withSession(account.token, headers) })

const displayName = async () => ((await app.deps.db.get(sql`SELECT display_name AS d FROM users WHERE id = ${account.me.id}`)) as { d: string | null }).d

describe('CSRF', () => {
  test('a cookie-authenticated PATCH with Sec-Fetch-Site: cross-site is refused with 403 csrf_rejected and changes nothing', async () => {
    const before = await displayName()
    const p = await expectProblem(await patchMe({ 'sec-fetch-site': 'cross-site' }, { display_name: 'Evil' }), 403, 'csrf_rejected')
    expect(p.detail).toBeString()
    expect(await displayName()).toBe(before)
  })

  test('an Origin other than PUBLIC_URL is refused with 403 csrf_rejected', async () => {
    for (const origin of ['http://evil.test', 'https://gpuhq.test', 'http://gpuhq.test:8080', 'http://sub.gpuhq.test', 'null'])
      await expectProblem(await patchMe({ origin }, { display_name: 'Evil' }), 403, 'csrf_rejected')
    expect(await displayName()).not.toBe('Evil')
  })

  test('a same-site request from a sibling origin is refused by its Origin', async () => {
    await expectProblem(await patchMe({ 'sec-fetch-site': 'same-site', origin: 'http://blog.gpuhq.test' }), 403, 'csrf_rejected')
  })

  test('cross-site wins even when the Origin header claims to be ours', async () => {
    await expectProblem(await patchMe({ 'sec-fetch-site': 'cross-site', origin: TEST_PUBLIC_URL }), 403, 'csrf_rejected')
  })

  test('the Origin equal to PUBLIC_URL is accepted', async () => {
    const res = await patchMe({ origin: TEST_PUBLIC_URL, 'sec-fetch-site': 'same-origin' }, { display_name: 'Same Origin' })
    expect(res.status).toBe(200)
    expect(((await res.json()) as Me).display_name).toBe('Same Origin')
  })

  test('a request without Sec-Fetch-Site or Origin (a non-browser client) is accepted', async () => {
    const res = await patchMe({}, { display_name: 'Script' })
    expect(res.status).toBe(200)
    expect(await displayName()).toBe('Script')
  })

  test('GET is never refused, whatever Sec-Fetch-Site and Origin say', async () => {
    for (const headers of [
      { 'sec-fetch-site': 'cross-site' },
      { origin: 'http://evil.test' },
      { 'sec-fetch-site': 'cross-site', origin: 'http://evil.test' },
    ] as Record<string, string>[]) {
      expect((await getMe(app, account.token, headers)).status).toBe(200)
      expect((await app.fetch('/api/v1/users', { headers: withSession(account.token, headers) })).status).toBe(200)
    }
  })

  test('signing out cross-site is refused and the session survives', async () => {
    const res = await app.fetch('/api/v1/auth/sessions/current', { method: 'DELETE', headers: withSession(account.token, { 'sec-fetch-site': 'cross-site' }) })
    await expectProblem(res, 403, 'csrf_rejected')
    expect((await getMe(app, account.token)).status).toBe(200)
  })

  test('a bearer-token request is not subject to the check: the same cross-site POST that a cookie may not make, a token may', async () => {
    const minted = await app.fetch('/api/v1/tokens', {
      method: 'POST',
      json: { name: 'ci', scopes: ['servers:read', 'servers:write'] },
      headers: withSession(account.token),
    })
    expect(minted.status).toBe(201)
    const { token } = (await minted.json()) as { token: string }
    const hostile = { 'sec-fetch-site': 'cross-site', origin: 'http://evil.test' }
    const byCookie = await app.fetch('/api/v1/groups', { method: 'POST', json: { name: 'by cookie' }, headers: withSession(account.token, hostile) })
    await expectProblem(byCookie, 403, 'csrf_rejected')
    const byToken = await app.fetch('/api/v1/groups', { method: 'POST', json: { name: 'by token' }, headers: { authorization: `Bearer ${token}`, ...hostile } })
    expect(byToken.status).toBe(201)
  })

  test('without a valid session the answer is 401, not csrf_rejected', async () => {
    const res = await app.fetch('/api/v1/me', {
      method: 'PATCH',
      json: { display_name: 'x' },
      headers: { 'sec-fetch-site': 'cross-site', cookie: '__Host-gpuhq_session=' + 'C'.repeat(43) },
    })
    await expectProblem(res, 401, 'unauthorized')
  })
})
