import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { addMember, call, mintPat, newTenant, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { expectProblem } from '../support/problem'

/**
 * Limits on every request (docs/conventions.md "Rate limits"): writes counted by tenant
 * (RATE_LIMIT_TENANT_WRITES_PER_MINUTE), every request of a bearer token by token
 * (RATE_LIMIT_TOKEN_PER_MINUTE), every request of a browser session by its member
 * (RATE_LIMIT_SESSION_USER_PER_MINUTE). Set low here; the defaults are in docs/configuration.md.
 */
const WRITES = 6
const TOKEN = 10
const SESSION_USER = 12

let app: TestApp
beforeAll(async () => {
  app = await startTestApp({
    LOG_LEVEL: 'silent',
    RATE_LIMIT_TENANT_WRITES_PER_MINUTE: String(WRITES),
    RATE_LIMIT_TOKEN_PER_MINUTE: String(TOKEN),
    RATE_LIMIT_SESSION_USER_PER_MINUTE: String(SESSION_USER),
  })
})
afterAll(() => app.close())

let seq = 0
const newGroup = (who: Member | string) => call(app, 'POST', '/groups', who, { json: { name: `group ${++seq}` } })
const advance = async (seconds: number) =>
  expect((await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } })).status).toBe(200)
async function retryAfterOf(res: Response): Promise<number> {
  const header = res.headers.get('retry-after')
  expect(header).toMatch(/^[1-9]\d*$/)
  await expectProblem(res, 429, 'rate_limited')
  return Number(header)
}

describe('writes by tenant', () => {
  test('past the limit a write answers 429 with Retry-After and does nothing; reads go on', async () => {
    const owner = await newTenant(app, 'busy')
    for (let i = 0; i < WRITES; i++) expect((await newGroup(owner)).status).toBe(201)
    const wait = await retryAfterOf(await newGroup(owner))
    expect(wait).toBeLessThanOrEqual(Math.ceil(60 / WRITES))
    const groups = (await (await call(app, 'GET', '/groups', owner)).json()) as { items: unknown[] }
    expect(groups.items).toHaveLength(WRITES)
  })

  test("the limit is the tenant's, whoever writes: another member shares it, another tenant does not", async () => {
    const owner = await newTenant(app, 'shared')
    const pat = await mintPat(app, owner, { scopes: ['servers:write'] })
    for (let i = 0; i < WRITES - 1; i++) expect((await newGroup(owner)).status).toBe(201)
    await retryAfterOf(await newGroup(pat.token))
    await retryAfterOf(await newGroup(owner))
    const stranger = await newTenant(app, 'stranger')
    expect((await newGroup(stranger)).status).toBe(201)
  })

  test('moving the clock on by Retry-After lets the next write through, and only one', async () => {
    const owner = await newTenant(app, 'refill')
    for (let i = 0; i < WRITES; i++) await newGroup(owner)
    const wait = await retryAfterOf(await newGroup(owner))
    await advance(wait)
    expect((await newGroup(owner)).status).toBe(201)
    await retryAfterOf(await newGroup(owner))
    await advance(60)
    for (let i = 0; i < WRITES; i++) expect((await newGroup(owner)).status).toBe(201)
  })
  test('a write refused with 429 keeps nothing for its Idempotency-Key: the retry after the wait runs', async () => {
    const owner = await newTenant(app, 'idem')
    for (let i = 0; i < WRITES; i++) await newGroup(owner)
    const mint = () => call(app, 'POST', '/tokens', owner, { json: { name: 'after the wait' }, headers: { 'idempotency-key': 'rate-limited-once' } })
    const wait = await retryAfterOf(await mint())
    await advance(wait)
    const res = await mint()
    expect(res.status).toBe(201)
    expect(res.headers.get('idempotent-replayed')).toBeNull()
  })
})

describe('requests by token', () => {
  test("every request of a PAT counts, reads too; the member's own session and other tokens are unaffected", async () => {
    const owner = await newTenant(app, 'reader')
    const pat = await mintPat(app, owner, { scopes: ['servers:read'] })
    const other = await mintPat(app, owner, { scopes: ['servers:read'] })
    for (let i = 0; i < TOKEN; i++) expect((await call(app, 'GET', '/groups', pat.token)).status).toBe(200)
    const wait = await retryAfterOf(await call(app, 'GET', '/groups', pat.token))
    expect(wait).toBeLessThanOrEqual(Math.ceil(60 / TOKEN))
    expect((await call(app, 'GET', '/groups', other.token)).status).toBe(200)
    expect((await call(app, 'GET', '/groups', owner)).status).toBe(200)
    await advance(60)
    expect((await call(app, 'GET', '/groups', pat.token)).status).toBe(200)
  })

  test("a request refused for its tenant does not use up the token's allowance", async () => {
    const owner = await newTenant(app, 'both')
    const pat = await mintPat(app, owner, { scopes: ['servers:read', 'servers:write'] })
    for (let i = 0; i < WRITES - 1; i++) await newGroup(owner)
    for (let i = 0; i < TOKEN; i++) await retryAfterOf(await newGroup(pat.token))
    // Ten refused writes later the token can still read: refused requests took nothing from it.
    expect((await call(app, 'GET', '/groups', pat.token)).status).toBe(200)
  })
})

describe('requests by signed-in member (issue 34: browser sessions had no limit on reads)', () => {
  test("every request of a member's browser session counts, reads too; another member and the member's tokens are unaffected", async () => {
    const owner = await newTenant(app, 'browser')
    const other = await addMember(app, owner.tenantId, 'viewer')
    const pat = await mintPat(app, owner, { scopes: ['servers:read'] })
    for (let i = 1; i < SESSION_USER; i++) expect((await call(app, 'GET', '/groups', owner)).status).toBe(200)
    const wait = await retryAfterOf(await call(app, 'GET', '/groups', owner))
    expect(wait).toBeLessThanOrEqual(Math.ceil(60 / SESSION_USER))
    expect((await call(app, 'GET', '/groups', other)).status).toBe(200)
    expect((await call(app, 'GET', '/groups', pat.token)).status).toBe(200)
    await advance(60)
    expect((await call(app, 'GET', '/groups', owner)).status).toBe(200)
  })
})

test('a limit of 0 turns it off', async () => {
  const open = await startTestApp({ LOG_LEVEL: 'silent', RATE_LIMIT_TENANT_WRITES_PER_MINUTE: '0', RATE_LIMIT_TOKEN_PER_MINUTE: '0' })
  try {
    const owner = await newTenant(open, 'unlimited')
    const pat = await mintPat(open, owner, { scopes: ['servers:write'] })
    for (let i = 0; i < 30; i++) expect((await call(open, 'POST', '/groups', pat.token, { json: { name: `g${i}` } })).status).toBe(201)
  } finally {
    await open.close()
  }
})
