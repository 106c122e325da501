import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { hashPassword } from '../../src/platform/passwords'
import { getMe, sessionFrom, signIn, signUp, startAccountsApp, withSession, type Account, type AccountsApp, type Me } from '../support/accounts'
import { expectProblem } from '../support/problem'

/**
 * Users (docs/auth.md "Users"): GET/PATCH /me (timezone is an IANA zone, locale is canonicalised),
 * GET /users lists the tenant's members with their roles.
 */

let app: AccountsApp
let owner: Account
let neighbour: Account
const members: { email: string; role: string; token?: string }[] = []
type UsersPage = { items: Omit<Me, 'tenant_id' | 'timezone' | 'locale'>[]; next_cursor: string | null }

beforeAll(async () => {
  app = await startAccountsApp()
  owner = await signUp(app, undefined, undefined, 'Owner Tenant')
  neighbour = await signUp(app, undefined, undefined, 'Neighbour Tenant')
  // There is no invitation API yet: members join the owner's tenant as fixture rows, with a real
  // argon2id hash so they can sign in over HTTP like anyone else.
  const hash = await hashPassword('member passphrase 1')
  for (const role of ['admin', 'operator', 'viewer']) {
    const email = `${role}-${Date.now()}@example.test`
    const now = app.deps.clock.nowUs()
    await app.deps.db.run(
      sql`INSERT INTO users (id, tenant_id, email, password_hash, role, timezone, locale, created_at, updated_at) VALUES (${app.deps.newId()}, ${owner.me.tenant_id}, ${email}, ${hash}, ${role}, ${'UTC'}, ${'en'}, ${now}, ${now})`,
    )
    members.push({ email, role })
  }
})
afterAll(() => app.stop())

const patchMe = (token: string, body: unknown) => app.fetch('/api/v1/me', { method: 'PATCH', json: body, headers: withSession(token) })
const listUsers = (token: string, query = '') => app.fetch(`/api/v1/users${query}`, { headers: withSession(token) })

describe('members', () => {
  test('GET /users lists every member of the tenant with their role, and nobody from another tenant', async () => {
    const res = await listUsers(owner.token)
    expect(res.status).toBe(200)
    const page = (await res.json()) as UsersPage
    expect(page.next_cursor).toBeNull()
    const byEmail = Object.fromEntries(page.items.map((u: { email: string; role: string }) => [u.email, u.role]))
    expect(byEmail).toEqual({ [owner.email]: 'owner', ...Object.fromEntries(members.map((m) => [m.email, m.role])) })
    expect(page.items.map((u: { email: string }) => u.email)).not.toContain(neighbour.email)
    for (const u of page.items) expect(Object.keys(u).sort()).toEqual(['created_at', 'display_name', 'email', 'id', 'role'])
  })

  test('a viewer may list the members too', async () => {
    const viewer = members.find((m) => m.role === 'viewer')!
    const token = sessionFrom(await signIn(app, viewer.email, 'member passphrase 1'))!
    const page = (await (await listUsers(token)).json()) as UsersPage
    expect(page.items).toHaveLength(4)
    expect(((await (await getMe(app, token)).json()) as Me).role).toBe('viewer')
  })

  test('the list pages with limit and next_cursor, and a cursor does not carry over to another tenant', async () => {
    const seen: string[] = []
    let query = '?limit=1'
    for (let i = 0; i < 10; i++) {
      const page = (await (await listUsers(owner.token, query)).json()) as UsersPage
      seen.push(...page.items.map((u: { email: string }) => u.email))
      if (!page.next_cursor) break
      query = `?limit=1&cursor=${encodeURIComponent(page.next_cursor)}`
      if (i === 0) {
        const foreign = await expectProblem(await listUsers(neighbour.token, query), 422, 'validation_failed')
        expect(foreign.errors).toEqual([{ path: '/cursor', code: 'invalid_cursor' }])
      }
    }
    expect(new Set(seen).size).toBe(4)
  })

  test('the other tenant sees only itself', async () => {
    const page = (await (await listUsers(neighbour.token)).json()) as UsersPage
    expect(page.items.map((u: { email: string; role: string }) => [u.email, u.role])).toEqual([[neighbour.email, 'owner']])
  })

  test('GET /users and GET /me without a session answer 401', async () => {
    await expectProblem(await app.fetch('/api/v1/users'), 401, 'unauthorized')
    await expectProblem(await app.fetch('/api/v1/me'), 401, 'unauthorized')
    await expectProblem(await app.fetch('/api/v1/me', { method: 'PATCH', json: { timezone: 'UTC' } }), 401, 'unauthorized')
  })
})

describe('profile preferences', () => {
  test('GET /me returns the profile fields', async () => {
    const me = (await (await getMe(app, owner.token)).json()) as Me
    expect(Object.keys(me).sort()).toEqual(['created_at', 'display_name', 'email', 'id', 'locale', 'role', 'tenant_id', 'timezone'])
    expect(me.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
  })

  test('the time zone can be set to any IANA zone and is kept', async () => {
    for (const tz of ['Europe/Berlin', 'America/Argentina/Buenos_Aires', 'Asia/Kolkata', 'UTC']) {
      const res = await patchMe(owner.token, { timezone: tz })
      expect(res.status).toBe(200)
      expect(((await res.json()) as Me).timezone).toBe(tz)
      expect(((await (await getMe(app, owner.token)).json()) as Me).timezone).toBe(tz)
    }
  })

  test('a time zone that is not in the IANA database answers 422 unknown_time_zone and changes nothing', async () => {
    expect((await patchMe(owner.token, { timezone: 'Europe/Berlin' })).status).toBe(200)
    // A UTC offset is not a zone: it knows no daylight-saving rules.
    for (const tz of ['Mars/Base', 'Europe/Atlantis', 'GMT+25', 'not a zone', '+05:00', '-0330']) {
      const p = await expectProblem(await patchMe(owner.token, { timezone: tz }), 422, 'validation_failed')
      expect(p.errors).toEqual([{ path: '/timezone', code: 'unknown_time_zone' }])
    }
    expect(((await (await getMe(app, owner.token)).json()) as Me).timezone).toBe('Europe/Berlin')
  })

  test('the time zone is stored in its IANA spelling whatever the case it was sent in', async () => {
    for (const [given, stored] of [
      ['europe/berlin', 'Europe/Berlin'],
      ['utc', 'UTC'],
      ['AMERICA/NEW_YORK', 'America/New_York'],
    ]) {
      const res = await patchMe(owner.token, { timezone: given })
      expect(res.status).toBe(200)
      expect(((await res.json()) as Me).timezone).toBe(stored)
    }
  })

  test('the locale is stored canonicalised', async () => {
    for (const [given, stored] of [
      ['de-de', 'de-DE'],
      ['EN-us', 'en-US'],
      ['zh-hant-tw', 'zh-Hant-TW'],
      ['fr', 'fr'],
    ]) {
      const res = await patchMe(owner.token, { locale: given })
      expect(res.status).toBe(200)
      expect(((await res.json()) as Me).locale).toBe(stored)
    }
  })

  test('a locale that is not a BCP 47 tag answers 422 invalid_locale', async () => {
    const p = await expectProblem(await patchMe(owner.token, { locale: 'not_a-locale!' }), 422, 'validation_failed')
    expect(p.errors).toEqual([{ path: '/locale', code: 'invalid_locale' }])
  })

  test('the display name can be set and cleared with null', async () => {
    expect(((await (await patchMe(owner.token, { display_name: 'Ada' })).json()) as Me).display_name).toBe('Ada')
    expect(((await (await patchMe(owner.token, { display_name: null })).json()) as Me).display_name).toBeNull()
  })

  test('an empty patch, an unknown field or a field the user may not change answers 422', async () => {
    await expectProblem(await patchMe(owner.token, {}), 422, 'validation_failed')
    for (const body of [{ role: 'owner' }, { email: 'new@example.test' }, { tenant_id: neighbour.me.tenant_id }]) {
      const p = await expectProblem(await patchMe(owner.token, body), 422, 'validation_failed')
      expect(p.errors!.map((e) => e.code)).toContain('unknown_field')
    }
    expect(((await (await getMe(app, owner.token)).json()) as Me).email).toBe(owner.email)
  })

  test('a member changes only their own profile', async () => {
    const viewer = members.find((m) => m.role === 'viewer')!
    const token = sessionFrom(await signIn(app, viewer.email, 'member passphrase 1'))!
    expect((await patchMe(token, { timezone: 'Asia/Tokyo' })).status).toBe(200)
    expect(((await (await getMe(app, owner.token)).json()) as Me).timezone).not.toBe('Asia/Tokyo')
  })
})
