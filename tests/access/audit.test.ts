import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { GOOD_PASSWORD, signIn, signUp, startAccountsApp, withSession, type AccountsApp } from '../support/accounts'
import { addMember, auditRows, call, insertServer, mintPat, newTenant, serviceNowUs, type AuditItem, type Member } from '../support/access'
import { expectProblem } from '../support/problem'

/** Issue 4 "Audit": GET /audit lists who did what in the tenant, written with the change it records. */

const UA = { 'user-agent': 'audit-test/1.0' }
let app: AccountsApp
let owner: Member
let viewer: Member
let stranger: Member

beforeAll(async () => {
  app = await startAccountsApp()
  owner = await newTenant(app, 'audit-owner')
  viewer = await addMember(app, owner.tenantId, 'viewer')
  stranger = await newTenant(app, 'audit-stranger')
})
afterAll(() => app.stop())

const find = (rows: AuditItem[], operation: string, pred: (r: AuditItem) => boolean = () => true) => rows.filter((r) => r.operation === operation && pred(r))

function expectRecent(row: AuditItem) {
  expect(row.ip).toBe('127.0.0.1')
  expect(Math.abs(Date.parse(row.created_at) - serviceNowUs(app) / 1000)).toBeLessThan(10_000)
}

describe('the audit trail', () => {
  test('signup, password-reset completion and sign-ins, succeeded and denied, appear with who, from where and the outcome', async () => {
    const account = await signUp(app)
    expect((await signIn(app, account.email, GOOD_PASSWORD, UA)).status).toBe(201)
    expect((await signIn(app, account.email, 'wrong but long enough', UA)).status).toBe(401)
    const me = account.me.id
    const rows = await auditRows(app, { userId: me, tenantId: account.me.tenant_id, email: account.email, role: 'owner', session: account.token })
    const [signup] = find(rows, 'auth.signup')
    expect(signup).toMatchObject({ actor: { kind: 'user', id: me }, outcome: 'succeeded', target: { kind: 'user', id: me } })
    expectRecent(signup!)
    const signins = find(rows, 'auth.sign_in')
    expect(signins.map((r) => [r.outcome, r.actor, r.user_agent])).toEqual([
      ['denied', { kind: 'user', id: me }, 'audit-test/1.0'],
      ['succeeded', { kind: 'user', id: me }, 'audit-test/1.0'],
    ])
    signins.forEach(expectRecent)

    // The owner and the viewer each set their password with an operator ticket (tests/support/access.ts).
    const reset = find(await auditRows(app, owner), 'auth.password_reset', (r) => r.actor.id === owner.userId)
    expect(reset).toHaveLength(1)
    expect(find(await auditRows(app, owner), 'auth.password_reset', (r) => r.actor.id === viewer.userId)).toHaveLength(1)
    expect(reset[0]).toMatchObject({ actor: { kind: 'user', id: owner.userId }, outcome: 'succeeded' })
    expectRecent(reset[0]!)
  })

  test('token mint and revoke, init-token mint, a profile change and a refused write each leave a row', async () => {
    const minted = await call(app, 'POST', '/tokens', owner, { json: { name: 'audited' }, headers: UA })
    const { id } = (await minted.json()) as { id: string }
    expect((await call(app, 'DELETE', `/tokens/${id}`, owner, { headers: UA })).status).toBe(204)
    expect((await call(app, 'POST', '/tokens/init', owner, { json: {}, headers: UA })).status).toBe(201)
    expect((await call(app, 'PATCH', '/me', owner, { json: { display_name: 'Ops' }, headers: UA })).status).toBe(200)
    await expectProblem(await call(app, 'POST', '/tokens/init', viewer, { json: {}, headers: UA }), 403, 'forbidden')

    const rows = await auditRows(app, owner)
    const byOwner = { actor: { kind: 'user', id: owner.userId }, user_agent: 'audit-test/1.0', outcome: 'succeeded' }
    expect(find(rows, 'tokens.create', (r) => r.target?.id === id)[0]).toMatchObject({ ...byOwner, target: { kind: 'token', id } })
    expect(find(rows, 'tokens.revoke', (r) => r.target?.id === id)[0]).toMatchObject({ ...byOwner, target: { kind: 'token', id } })
    expect(find(rows, 'tokens.init.create')[0]).toMatchObject({ ...byOwner, target: { kind: 'init_token' } })
    expect(find(rows, 'PATCH /api/v1/me')[0]).toMatchObject({ ...byOwner, status: 200 })
    const denied = find(rows, 'POST /api/v1/tokens/init', (r) => r.outcome === 'denied')
    expect(denied).toHaveLength(1)
    expect(denied[0]).toMatchObject({ actor: { kind: 'user', id: viewer.userId }, status: 403, user_agent: 'audit-test/1.0' })
    for (const r of [...find(rows, 'tokens.create'), ...find(rows, 'tokens.revoke'), ...find(rows, 'tokens.init.create'), ...denied]) {
      expectRecent(r)
      expect(r.request_id).not.toBeNull()
    }
  })

  test('a mint that fails inside its transaction leaves no tokens.create row, only the failed request', async () => {
    const before = find(await auditRows(app, owner), 'tokens.create').length
    const tokens = await app.deps.db.get(sql`SELECT count(*) AS n FROM access_tokens`)
    const res = await call(app, 'POST', '/tokens', owner, { json: { name: 'doomed', server_allowlist: [crypto.randomUUID()] } })
    expect((await expectProblem(res, 422, 'validation_failed')).errors).toEqual([{ path: '/server_allowlist/0', code: 'unknown_server' }])
    const rows = await auditRows(app, owner)
    expect(find(rows, 'tokens.create')).toHaveLength(before)
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM access_tokens`)).toEqual(tokens)
    expect(find(rows, 'POST /api/v1/tokens', (r) => r.status === 422)[0]).toMatchObject({ outcome: 'failed', actor: { kind: 'user', id: owner.userId } })
  })

  test('the list filters by actor kind, operation, outcome and time, and pages newest first with next_cursor', async () => {
    const writer = await mintPat(app, owner, { scopes: ['servers:write'] })
    const server = await insertServer(app, owner.tenantId)
    expect((await call(app, 'POST', '/tokens/init', writer.token, { json: { server_id: server } })).status).toBe(201)

    const all = await auditRows(app, owner)
    expect(all.length).toBeGreaterThan(6)
    expect(all.map((r) => r.created_at)).toEqual([...all.map((r) => r.created_at)].sort().reverse())

    const byPat = await auditRows(app, owner, { actor_kind: 'pat' })
    expect(byPat.map((r) => [r.operation, r.actor.id])).toEqual([['tokens.init.create', writer.id]])
    expect((await auditRows(app, owner, { actor_id: viewer.userId })).every((r) => r.actor.id === viewer.userId)).toBe(true)
    const creates = await auditRows(app, owner, { operation: 'tokens.create' })
    expect(creates.length).toBe(find(all, 'tokens.create').length)
    expect(creates.every((r) => r.operation === 'tokens.create')).toBe(true)
    const denied = await auditRows(app, owner, { outcome: 'denied' })
    expect(denied.length).toBeGreaterThan(0)
    expect(denied.every((r) => r.outcome === 'denied')).toBe(true)

    const pivot = all[Math.floor(all.length / 2)]!.created_at
    const from = await auditRows(app, owner, { from: pivot })
    const to = await auditRows(app, owner, { to: pivot })
    expect(from.every((r) => r.created_at >= pivot) && to.every((r) => r.created_at < pivot)).toBe(true)
    expect(from.length + to.length).toBe(all.length)
    await expectProblem(await call(app, 'GET', '/audit?from=yesterday', owner), 422, 'validation_failed')

    const pages: AuditItem[][] = []
    let cursor: string | null = null
    do {
      const res = await call(app, 'GET', `/audit?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, owner)
      const page = (await res.json()) as { items: AuditItem[]; next_cursor: string | null }
      pages.push(page.items)
      cursor = page.next_cursor
    } while (cursor && pages.length < 100)
    expect(pages.slice(0, -1).every((p) => p.length === 2)).toBe(true)
    expect(pages.flat().map((r) => r.id)).toEqual(all.map((r) => r.id))
  })

  test("another tenant never sees this tenant's rows", async () => {
    const mine = new Set((await auditRows(app, owner)).map((r) => r.id))
    const theirs = await auditRows(app, stranger)
    expect(theirs.length).toBeGreaterThan(0)
    expect(theirs.filter((r) => mine.has(r.id))).toEqual([])
    expect(theirs.every((r) => r.actor.id === stranger.userId)).toBe(true)
    const row = (await app.deps.db.get(sql`SELECT count(*) AS n FROM audit_log WHERE tenant_id = ${stranger.tenantId}`)) as { n: number }
    expect(theirs.length).toBe(row.n)
  })

  test('a viewer or operator is refused, and a PAT needs audit:read', async () => {
    await expectProblem(await call(app, 'GET', '/audit', viewer), 403, 'forbidden')
    const operator = await addMember(app, owner.tenantId, 'operator')
    await expectProblem(await call(app, 'GET', '/audit', operator), 403, 'forbidden')
    const without = await mintPat(app, owner, { scopes: ['servers:read', 'billing:read'] })
    await expectProblem(await call(app, 'GET', '/audit', without.token), 403, 'forbidden')
    const reader = await mintPat(app, owner, { scopes: ['audit:read'] })
    const res = await call(app, 'GET', '/audit?limit=1', reader.token)
    expect(res.status).toBe(200)
    expect(((await res.json()) as { items: AuditItem[] }).items).toHaveLength(1)
    expect((await call(app, 'GET', '/audit', null, { headers: withSession('x'.repeat(43)) })).status).toBe(401)
  })
})
