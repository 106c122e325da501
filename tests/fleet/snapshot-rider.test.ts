import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { roundTrips } from '../../db/client'
import { call, insertServer, mintPat, newTenant, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { onPostgres } from '../support/postgres'

/**
 * GET /servers and GET /dashboard read the fleet snapshot's head first. On PostgreSQL that read
 * rides on the request's rate-limit statement (src/platform/rate-limit.ts `Rider`), so a read by a
 * kept token is one round trip. What rode must be the truth: a snapshot another instance marked out
 * of date is recomputed, a tenant never gets another's head, and without a count to ride on the
 * route reads for itself. The truth tests run on both databases.
 */

type Row = { name: string }
let app: TestApp
let other: TestApp
let unlimited: TestApp

beforeAll(async () => {
  app = await startTestApp()
  other = await startTestApp({ DATABASE_URL: app.databaseUrl })
  unlimited = await startTestApp({ DATABASE_URL: app.databaseUrl, RATE_LIMIT_TOKEN_PER_MINUTE: '0' })
})
afterAll(async () => {
  await unlimited.close()
  await other.close()
  await app.close()
})

async function fleetNames(target: TestApp, token: string): Promise<string[]> {
  const res = await call(target, 'GET', '/servers?limit=100', token)
  expect(res.status).toBe(200)
  return ((await res.json()) as { items: Row[] }).items.map((r) => r.name)
}

async function tenantWithToken(tag: string): Promise<{ owner: Member; token: string }> {
  const owner = await newTenant(app, tag)
  return { owner, token: (await mintPat(app, owner)).token }
}

/** A server added and the snapshot marked out of date by another process, as another instance's write does. */
async function addElsewhere(tenantId: string, name: string): Promise<void> {
  await insertServer(other, tenantId, name)
  await other.deps.db.run(sql`UPDATE fleet_snapshots SET dirty = 1 WHERE tenant_id = ${tenantId}`)
}

describe('the snapshot head that rides on the count', () => {
  test('a snapshot marked out of date elsewhere is recomputed at the next read', async () => {
    const { owner, token } = await tenantWithToken('rider-dirty')
    await insertServer(app, owner.tenantId, 'a-first')
    expect(await fleetNames(app, token)).toEqual(['a-first'])
    // Added without marking: the stored snapshot is still the answer (this is what makes the next step a test).
    await insertServer(other, owner.tenantId, 'b-unmarked')
    expect(await fleetNames(app, token)).toEqual(['a-first'])
    await addElsewhere(owner.tenantId, 'c-marked')
    expect(await fleetNames(app, token)).toEqual(['a-first', 'b-unmarked', 'c-marked'])
    await addElsewhere(owner.tenantId, 'd-marked')
    const dashboard = await call(app, 'GET', '/dashboard', token)
    expect(((await dashboard.json()) as { servers: { total: number } }).servers.total).toBe(4)
  })

  test('a snapshot deleted elsewhere is computed again', async () => {
    const { owner, token } = await tenantWithToken('rider-deleted')
    await insertServer(app, owner.tenantId, 'first')
    expect(await fleetNames(app, token)).toEqual(['first'])
    await insertServer(other, owner.tenantId, 'second')
    await other.deps.db.run(sql`DELETE FROM fleet_snapshots WHERE tenant_id = ${owner.tenantId}`)
    expect(await fleetNames(app, token)).toEqual(['first', 'second'])
  })

  test("two tenants' tokens taking turns each get their own fleet", async () => {
    const a = await tenantWithToken('rider-turns-a')
    const b = await tenantWithToken('rider-turns-b')
    await insertServer(app, a.owner.tenantId, 'only-a')
    await insertServer(app, b.owner.tenantId, 'only-b')
    for (let round = 0; round < 3; round++) {
      const [na, nb] = await Promise.all([fleetNames(app, a.token), fleetNames(app, b.token)])
      expect(na).toEqual(round === 2 ? ['only-a', 'round-a'] : ['only-a'])
      expect(nb).toEqual(['only-b'])
      if (round === 1) await addElsewhere(a.owner.tenantId, 'round-a')
    }
  })

  test('with no rate limit to ride on, the route reads the head itself', async () => {
    const { owner, token } = await tenantWithToken('rider-unlimited')
    await insertServer(app, owner.tenantId, 'one')
    expect(await fleetNames(unlimited, token)).toEqual(['one'])
    expect(await fleetNames(unlimited, token)).toEqual(['one'])
    await addElsewhere(owner.tenantId, 'two')
    expect(await fleetNames(unlimited, token)).toEqual(['one', 'two'])
  })
})

describe.skipIf(!onPostgres)('one round trip for a read by a kept token (PostgreSQL)', () => {
  test('GET /servers, its 304 and GET /dashboard each send one statement', async () => {
    const { owner, token } = await tenantWithToken('rider-trips')
    await insertServer(app, owner.tenantId, 'rig')
    // The first requests verify the token and compute the snapshot.
    const first = await call(app, 'GET', '/servers', token)
    const etag = first.headers.get('etag')!
    await call(app, 'GET', '/dashboard', token)
    const trips = async (send: () => Promise<Response>, status: number) => {
      const before = roundTrips(app.deps.db)!.statements
      expect((await send()).status).toBe(status)
      return roundTrips(app.deps.db)!.statements - before
    }
    expect(await trips(() => call(app, 'GET', '/servers', token), 200)).toBe(1)
    expect(await trips(() => call(app, 'GET', '/servers', token, { headers: { 'if-none-match': etag } }), 304)).toBe(1)
    expect(await trips(() => call(app, 'GET', '/dashboard', token), 200)).toBe(1)
  })
})
