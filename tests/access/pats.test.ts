import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { resolvePat } from '../../src/modules/tokens/tokens.service'
import { hasValidChecksum } from '../../src/platform/secrets'
import { advance } from '../support/accounts'
import {
  addMember,
  call,
  insertServer,
  mintPat,
  mutateAt,
  newTenant,
  serviceNowUs,
  setPlan,
  setRole,
  timestampIn,
  type Member,
  type MintedPat,
} from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { storedText, tableNames } from '../support/postgres'
import { expectProblem } from '../support/problem'

/** Personal access tokens: docs/access.md "Personal access tokens (PATs)". */

const PAT = /^gpuhq_pat_[0-9A-Za-z]{46}$/
const DAY_MS = 86_400_000

let app: TestApp
let owner: Member
let stranger: Member
/** Every plaintext secret this file saw, for the dump test at the end. */
const secrets: string[] = []
const pat = async (m: Member, body: Record<string, unknown> = {}) => {
  const p = await mintPat(app, m, body)
  secrets.push(p.token)
  return p
}

beforeAll(async () => {
  app = await startTestApp()
  owner = await newTenant(app, 'pat-owner')
  stranger = await newTenant(app, 'pat-stranger')
  secrets.push(owner.session, stranger.session)
})
afterAll(() => app.close())

describe('personal access tokens', () => {
  test('a member mints a token with read-only defaults, shown once with Cache-Control: no-store, expiring in 90 days', async () => {
    const res = await call(app, 'POST', '/tokens', owner, { json: { name: 'ci reader' } })
    expect(res.status).toBe(201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const body = (await res.json()) as MintedPat
    secrets.push(body.token)
    expect(body.token).toMatch(PAT)
    expect(hasValidChecksum(body.token, 'gpuhq_pat_')).toBe(true)
    expect(body).toMatchObject({ name: 'ci reader', scopes: ['servers:read'], server_allowlist: null, user_id: owner.userId, last_used_at: null })
    expect(body.prefix).toBe(body.token.slice(0, 14))
    expect(Date.parse(body.expires_at!) - Date.parse(body.created_at)).toBe(90 * DAY_MS)
    expect(Math.abs(Date.parse(body.created_at) - serviceNowUs(app) / 1000)).toBeLessThan(5000)
  })

  test('the token list never shows a plaintext, only the prefix', async () => {
    const minted = await pat(owner, { name: 'listed' })
    const res = await call(app, 'GET', '/tokens', owner)
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(text).not.toContain(minted.token)
    expect(text).not.toContain(minted.token.slice(14))
    const item = (JSON.parse(text).items as Record<string, unknown>[]).find((i) => i.id === minted.id)!
    expect(item).toMatchObject({ prefix: minted.prefix, name: 'listed' })
    expect(item.token).toBeUndefined()
  })

  test('a token works as Authorization: Bearer and is refused in a query string', async () => {
    const { token } = await pat(owner)
    const ok = await call(app, 'GET', '/me', token)
    expect(ok.status).toBe(200)
    expect(((await ok.json()) as { id: string }).id).toBe(owner.userId)
    for (const name of ['access_token', 'token']) await expectProblem(await call(app, 'GET', `/me?${name}=${token}`, null), 401, 'unauthorized')
    await expectProblem(await call(app, 'GET', '/me', null, { headers: { authorization: `Basic ${token}` } }), 401, 'unauthorized')
  })

  test('expires_at more than a year ahead or in the past is refused; null makes a non-expiring token outside production', async () => {
    const late = await call(app, 'POST', '/tokens', owner, { json: { name: 'x', expires_at: timestampIn(app, 367 * 86400) } })
    expect((await expectProblem(late, 422, 'validation_failed')).errors).toEqual([{ path: '/expires_at', code: 'too_late' }])
    const past = await call(app, 'POST', '/tokens', owner, { json: { name: 'x', expires_at: timestampIn(app, -60) } })
    expect((await expectProblem(past, 422, 'validation_failed')).errors).toEqual([{ path: '/expires_at', code: 'in_the_past' }])
    const nearYear = await pat(owner, { name: 'a year', expires_at: timestampIn(app, 360 * 86400) })
    expect(nearYear.expires_at).not.toBeNull()
    const forever = await pat(owner, { name: 'forever', expires_at: null })
    expect(forever.expires_at).toBeNull()
    expect((await call(app, 'GET', '/me', forever.token)).status).toBe(200)
  })

  test('an unknown scope is refused with a pointer to it', async () => {
    const res = await call(app, 'POST', '/tokens', owner, { json: { name: 'x', scopes: ['servers:admin', 'servers:read'] } })
    expect((await expectProblem(res, 422, 'validation_failed')).errors).toEqual([{ path: '/scopes/0', code: 'unknown_scope' }])
  })

  test('a viewer cannot grant a write scope their role does not have, but can mint a read token', async () => {
    const viewer = await addMember(app, owner.tenantId, 'viewer')
    secrets.push(viewer.session)
    await expectProblem(await call(app, 'POST', '/tokens', viewer, { json: { name: 'x', scopes: ['commands:write'] } }), 403, 'forbidden')
    expect((await pat(viewer, { scopes: ['commands:read'] })).scopes).toEqual(['commands:read'])
  })

  test("lowering the creator's role narrows an existing token at once, and removing the creator kills it", async () => {
    const operator = await addMember(app, owner.tenantId, 'operator')
    secrets.push(operator.session)
    const server = await insertServer(app, owner.tenantId)
    const { token } = await pat(operator, { scopes: ['servers:read', 'servers:write'] })
    const enrol = () => call(app, 'POST', '/tokens/init', token, { json: { server_id: server } })
    expect((await enrol()).status).toBe(201)

    await setRole(app, operator.userId, 'viewer')
    await expectProblem(await enrol(), 403, 'forbidden')
    expect((await resolvePat(app.deps, token))!.scopes).toEqual(['servers:read'])
    expect((await call(app, 'GET', '/me', token)).status).toBe(200)

    await setRole(app, operator.userId, 'operator')
    expect((await enrol()).status).toBe(201)

    await app.deps.db.run(sql`DELETE FROM users WHERE id = ${operator.userId}`)
    await expectProblem(await call(app, 'GET', '/me', token), 401, 'unauthorized')
  })

  test("revocation takes effect on the next request; revoking again, or another tenant's token, answers 404", async () => {
    const minted = await pat(owner)
    expect((await call(app, 'GET', '/me', minted.token)).status).toBe(200)
    await expectProblem(await call(app, 'DELETE', `/tokens/${minted.id}`, stranger), 404, 'not_found')
    expect((await call(app, 'GET', '/me', minted.token)).status).toBe(200)

    const del = await call(app, 'DELETE', `/tokens/${minted.id}`, owner)
    expect(del.status).toBe(204)
    await expectProblem(await call(app, 'GET', '/me', minted.token), 401, 'unauthorized')
    await expectProblem(await call(app, 'DELETE', `/tokens/${minted.id}`, owner), 404, 'not_found')
    const list = (await (await call(app, 'GET', '/tokens', owner)).json()) as { items: MintedPat[] }
    expect(list.items.map((i: { id: string }) => i.id)).not.toContain(minted.id)
  })

  test('last_used_at is recorded when the token is used', async () => {
    const minted = await pat(owner)
    const before = Date.now()
    expect((await call(app, 'GET', '/me', minted.token)).status).toBe(200)
    const list = (await (await call(app, 'GET', '/tokens', owner)).json()) as { items: MintedPat[] }
    const item = list.items.find((i: { id: string }) => i.id === minted.id)!
    expect(item.last_used_at).not.toBeNull()
    expect(Math.abs(Date.parse(item.last_used_at!) - before)).toBeLessThan(5000)
  })

  test('a tenant without a plan cannot mint tokens (409 plan_required)', async () => {
    const planless = await newTenant(app, 'planless')
    secrets.push(planless.session)
    await setPlan(app, planless.tenantId, null)
    await expectProblem(await call(app, 'POST', '/tokens', planless, { json: { name: 'x' } }), 409, 'plan_required')
    await setPlan(app, planless.tenantId, 'free')
    expect((await call(app, 'POST', '/tokens', planless, { json: { name: 'x' } })).status).toBe(201)
  })

  test('an Idempotency-Key retry replays the same token, and the stored answer does not hold it in plaintext', async () => {
    const send = () => call(app, 'POST', '/tokens', owner, { json: { name: 'retried' }, headers: { 'idempotency-key': 'mint-once-1' } })
    const first = await send()
    const second = await send()
    expect(first.status).toBe(201)
    expect(second.status).toBe(201)
    const [a, b] = [(await first.json()) as MintedPat, (await second.json()) as MintedPat]
    secrets.push(a.token)
    expect(b.token).toBe(a.token)
    expect(b.id).toBe(a.id)
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM access_tokens WHERE name = ${'retried'}`)).toEqual({ n: 1 })
    const row = (await app.deps.db.get(sql`SELECT response_box FROM idempotency_keys WHERE key = 'mint-once-1'`)) as { response_box: Uint8Array }
    expect(row.response_box.byteLength).toBeGreaterThan(0)
    expect(Buffer.from(row.response_box).includes(a.token)).toBe(false)
    expect(Buffer.from(row.response_box).includes(a.token.slice(14))).toBe(false)
  })

  test('a token past its expiry is refused (test clock), while a longer-lived one still works', async () => {
    const short = await pat(owner, { expires_at: timestampIn(app, 3600) })
    const long = await pat(owner)
    expect((await call(app, 'GET', '/me', short.token)).status).toBe(200)
    await advance(app, 3601)
    await expectProblem(await call(app, 'GET', '/me', short.token), 401, 'unauthorized')
    expect((await call(app, 'GET', '/me', long.token)).status).toBe(200)
  })

  test('a database dump, the raw database file and the logs hold no plaintext PAT, init token or session cookie', async () => {
    const server = await insertServer(app, owner.tenantId)
    await setPlan(app, owner.tenantId, 'starter')
    for (const json of [{}, { server_id: server }]) {
      const res = await call(app, 'POST', '/tokens/init', owner, { json, headers: { 'idempotency-key': `init-${server}-${Object.keys(json).length}` } })
      expect(res.status).toBe(201)
      secrets.push(((await res.json()) as { token: string }).token)
    }
    expect(secrets.length).toBeGreaterThan(15)
    const leaks: string[] = []
    for (const name of await tableNames(app.deps.db))
      for (const row of await app.deps.db.all<Record<string, unknown>>(sql`SELECT * FROM ${sql.identifier(name)}`))
        for (const [col, v] of Object.entries(row)) {
          const text = typeof v === 'string' ? v : v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : null
          if (text && secrets.some((s) => text.includes(s) || text.includes(s.slice(-40)))) leaks.push(`${name}.${col}`)
        }
    expect(leaks).toEqual([])

    // SQLite: the WAL's pages into the database file, which storedText reads (PostgreSQL has no such file).
    if (app.deps.database.kind === 'sqlite') await app.deps.db.run(sql`PRAGMA wal_checkpoint(TRUNCATE)`)
    const bytes = await storedText(app.deps.db, app.dir)
    expect(secrets.filter((s) => bytes.includes(s) || bytes.includes(s.slice(-40)))).toEqual([])
    const logs = app.rawLogs.join('\n')
    expect(secrets.filter((s) => logs.includes(s.slice(-40)))).toEqual([])
  })
})

describe('a mutated token', () => {
  test('one changed character breaks the checksum and is refused before any database lookup', async () => {
    const own = await startTestApp({ LOG_LEVEL: 'silent' })
    try {
      const m = await newTenant(own, 'mutant')
      const { token } = await mintPat(own, m)
      for (let i = 'gpuhq_pat_'.length; i < token.length; i++)
        expect({ i, valid: hasValidChecksum(mutateAt(token, i), 'gpuhq_pat_') }).toEqual({ i, valid: false })
      const mutant = mutateAt(token, 20)
      await expectProblem(await call(own, 'GET', '/me', mutant), 401, 'unauthorized')

      // With the database gone, a lookup could only fail (500); the checksum refusal needs none.
      await own.deps.database.close()
      const valid = await call(own, 'GET', '/me', token)
      expect(valid.status).toBe(500)
      await expectProblem(await call(own, 'GET', '/me', mutant), 401, 'unauthorized')
      await expectProblem(await call(own, 'GET', '/me', mutateAt(token, token.length - 1)), 401, 'unauthorized')
    } finally {
      await own.close().catch(() => {})
    }
  })
})

describe('in production', () => {
  test('a non-expiring token is refused', async () => {
    const prod = await startTestApp({ NODE_ENV: 'production', TEST_CLOCK: 'false', PAYMENT_PROVIDERS: '', LOG_LEVEL: 'silent' })
    try {
      const m = await newTenant(prod, 'prod')
      const res = await call(prod, 'POST', '/tokens', m, { json: { name: 'forever', expires_at: null } })
      expect((await expectProblem(res, 422, 'validation_failed')).errors).toEqual([{ path: '/expires_at', code: 'required' }])
      expect((await mintPat(prod, m)).expires_at).not.toBeNull()
    } finally {
      await prod.close()
    }
  })
})
