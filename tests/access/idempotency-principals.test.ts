import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ALL_SCOPES } from '../../src/platform/access'
import { addMember, call, insertServer, mintPat, newTenant, setPlan, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'

/**
 * Issue 13 (3): a stored idempotent answer is replayed only to the principal that made the request.
 * Anyone else in the tenant who sends the same key and body gets 409 idempotency_conflict, never
 * the first caller's answer (which may carry a secret shown once).
 */

let app: TestApp
let owner: Member
let viewer: Member
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newTenant(app, 'idem')
  await setPlan(app, owner.tenantId, 'pro')
  viewer = await addMember(app, owner.tenantId, 'viewer')
})
afterAll(() => app.close())

const problemCode = async (res: Response) => ((await res.json()) as { code?: string }).code

describe('idempotent replays stay with their principal', () => {
  test("a viewer who sends the owner's key and body for POST /tokens gets 409, not the owner's token", async () => {
    const body = { name: 'ci token', scopes: ['billing:write'] }
    const headers = { 'idempotency-key': 'owner-token-1' }
    const first = await call(app, 'POST', '/tokens', owner, { json: body, headers })
    expect(first.status).toBe(201)
    const minted = (await first.json()) as { token: string }

    const again = await call(app, 'POST', '/tokens', owner, { json: body, headers })
    expect(again.status).toBe(201)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(((await again.json()) as { token: string }).token).toBe(minted.token)

    const stolen = await call(app, 'POST', '/tokens', viewer, { json: body, headers })
    const text = await stolen.text()
    expect(stolen.status).toBe(409)
    expect(JSON.parse(text).code).toBe('idempotency_conflict')
    expect(text).not.toContain(minted.token)
  })

  test("a second token sending another token's POST /tokens/init key and body gets 409, not its init token", async () => {
    const server = await insertServer(app, owner.tenantId, 'rig')
    const a = (await mintPat(app, owner, { name: 'a', scopes: ALL_SCOPES })).token
    const b = (await mintPat(app, owner, { name: 'b', scopes: ALL_SCOPES })).token
    const headers = { 'idempotency-key': 'init-1' }
    const first = await call(app, 'POST', '/tokens/init', a, { json: { server_id: server }, headers })
    expect(first.status).toBe(201)
    const init = (await first.json()) as { token: string }
    const other = await call(app, 'POST', '/tokens/init', b, { json: { server_id: server }, headers })
    const text = await other.text()
    expect(other.status).toBe(409)
    expect(JSON.parse(text).code).toBe('idempotency_conflict')
    expect(text).not.toContain(init.token)
    // The principal that made it still gets its answer.
    const replay = await call(app, 'POST', '/tokens/init', a, { json: { server_id: server }, headers })
    expect(replay.status).toBe(201)
    expect(((await replay.json()) as { token: string }).token).toBe(init.token)
  })

  test('the same key in another tenant is another key altogether', async () => {
    const stranger = await newTenant(app, 'idem-other')
    await setPlan(app, stranger.tenantId, 'pro')
    const headers = { 'idempotency-key': 'owner-token-1' }
    const res = await call(app, 'POST', '/tokens', stranger, { json: { name: 'ci token', scopes: ['billing:write'] }, headers })
    expect(res.status).toBe(201)
    expect(res.headers.get('idempotent-replayed')).toBeNull()
    expect(await problemCode(await call(app, 'POST', '/tokens', stranger, { json: { name: 'other' }, headers }))).toBe('idempotency_conflict')
  })
})
