import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { roundTrips } from '../../db/client'
import { resolvePat } from '../../src/modules/tokens/tokens.service'
import { addMember, call, mintPat, newTenant, serviceNowUs, type Member } from '../support/access'
import { advance } from '../support/accounts'
import { startTestApp, type TestApp } from '../support/app'
import { expectProblem } from '../support/problem'

/**
 * A PAT's verification is kept in memory while the credentials' change counter (auth_epoch) is
 * unchanged (docs/scale-out.md "Credentials"). Every change below is made by a SECOND app on the
 * same database, as another instance or an operator's tool would: the first app learns of it only
 * through the counter its triggers move, and the token must stop or narrow at its next request.
 */

let app: TestApp
let other: TestApp
let owner: Member

const epoch = async () => ((await app.deps.db.get(sql`SELECT n FROM auth_epoch WHERE id = 1`)) as { n: number }).n

beforeAll(async () => {
  app = await startTestApp()
  other = await startTestApp({ DATABASE_URL: app.databaseUrl })
  owner = await newTenant(app, 'verified-pat')
})
afterAll(async () => {
  await other.close()
  await app.close()
})

describe('verified PATs kept in memory', () => {
  test('a revocation written by another process stops the token at its next request', async () => {
    const { token, id } = await mintPat(app, owner)
    for (let i = 0; i < 3; i++) expect((await call(app, 'GET', '/me', token)).status).toBe(200)
    await other.deps.db.run(sql`UPDATE access_tokens SET revoked_at = ${serviceNowUs(app)} WHERE id = ${id}`)
    await expectProblem(await call(app, 'GET', '/me', token), 401, 'unauthorized')
  })

  test('a lowered role, a frozen account and a removed plan reach the token at once; restored, it works again', async () => {
    const operator = await addMember(app, owner.tenantId, 'operator')
    const { token } = await mintPat(app, operator, { scopes: ['servers:read', 'servers:write'] })
    const write = () => call(app, 'POST', '/groups', token, { json: { name: `g-${crypto.randomUUID().slice(0, 8)}` } })
    expect((await write()).status).toBe(201)

    await other.deps.db.run(sql`UPDATE users SET role = 'viewer' WHERE id = ${operator.userId}`)
    await expectProblem(await write(), 403, 'forbidden')
    await other.deps.db.run(sql`UPDATE users SET role = 'operator' WHERE id = ${operator.userId}`)
    expect((await write()).status).toBe(201)

    // What the routes that refuse a frozen account see (e.g. POST /offers).
    await other.deps.db.run(sql`UPDATE tenants SET account_state = 'frozen' WHERE id = ${owner.tenantId}`)
    expect((await resolvePat(app.deps, token))!.tenant.accountState).toBe('frozen')
    await other.deps.db.run(sql`UPDATE tenants SET account_state = 'active' WHERE id = ${owner.tenantId}`)
    expect((await resolvePat(app.deps, token))!.tenant.accountState).toBe('active')

    const plan = ((await app.deps.db.get(sql`SELECT plan_code FROM tenants WHERE id = ${owner.tenantId}`)) as { plan_code: string }).plan_code
    await other.deps.db.run(sql`UPDATE tenants SET plan_code = NULL WHERE id = ${owner.tenantId}`)
    expect((await resolvePat(app.deps, token))!.tenant.planCode).toBeNull()
    await other.deps.db.run(sql`UPDATE tenants SET plan_code = ${plan} WHERE id = ${owner.tenantId}`)
    expect((await resolvePat(app.deps, token))!.tenant.planCode).toBe(plan)
  })

  test('a member moved to another tenant, or removed, takes the token with them', async () => {
    const viewer = await addMember(app, owner.tenantId, 'viewer')
    const { token } = await mintPat(app, viewer)
    expect((await call(app, 'GET', '/me', token)).status).toBe(200)
    const elsewhere = await newTenant(app, 'verified-pat-elsewhere')
    await other.deps.db.run(sql`UPDATE users SET tenant_id = ${elsewhere.tenantId} WHERE id = ${viewer.userId}`)
    await expectProblem(await call(app, 'GET', '/me', token), 401, 'unauthorized')

    const second = await addMember(app, owner.tenantId, 'viewer')
    const kept = await mintPat(app, second)
    expect((await call(app, 'GET', '/me', kept.token)).status).toBe(200)
    await other.deps.db.run(sql`DELETE FROM users WHERE id = ${second.userId}`)
    await expectProblem(await call(app, 'GET', '/me', kept.token), 401, 'unauthorized')
  })

  test('an expiry shortened elsewhere, and one reached by the clock, end the token', async () => {
    const shortened = await mintPat(app, owner)
    expect((await call(app, 'GET', '/me', shortened.token)).status).toBe(200)
    await other.deps.db.run(sql`UPDATE access_tokens SET expires_at = ${serviceNowUs(app) - 1} WHERE id = ${shortened.id}`)
    await expectProblem(await call(app, 'GET', '/me', shortened.token), 401, 'unauthorized')

    const { token } = await mintPat(app, owner, { expires_at: new Date(serviceNowUs(app) / 1000 + 86_400_000).toISOString() })
    expect((await call(app, 'GET', '/me', token)).status).toBe(200)
    await advance(app, 86_400 + 1)
    await expectProblem(await call(app, 'GET', '/me', token), 401, 'unauthorized')
  })

  test('what does not change a caller leaves the counter alone: using a token (its last-used stamp), minting one, a new member', async () => {
    const { token, id } = await mintPat(app, owner)
    const before = await epoch()
    const stamp = async () =>
      ((await app.deps.db.get(sql`SELECT last_used_at FROM access_tokens WHERE id = ${id}`)) as { last_used_at: number | null }).last_used_at
    expect((await call(app, 'GET', '/me', token)).status).toBe(200)
    const first = await stamp()
    expect(first).not.toBeNull()
    await advance(app, 120)
    expect((await call(app, 'GET', '/me', token)).status).toBe(200)
    expect(await stamp()).toBeGreaterThanOrEqual(first! + 120_000_000)
    await mintPat(app, owner)
    await newTenant(app, 'verified-pat-new')
    expect(await epoch()).toBe(before)
  })

  test('a session signed out through another instance stops at its next request; one slid there stays valid here', async () => {
    const member = await addMember(app, owner.tenantId, 'viewer')
    expect((await call(app, 'GET', '/me', member)).status).toBe(200)
    // Another instance slides the idle expiry (what its request near the end of the idle time writes).
    const idle = app.deps.config.sessionIdleSeconds
    await advance(app, idle - 60)
    const seen = serviceNowUs(app)
    await other.deps.db.run(sql`UPDATE sessions SET last_seen_at = ${seen}, idle_expires_at = ${seen + idle * 1_000_000} WHERE user_id = ${member.userId}`)
    await advance(app, 120)
    // Past the idle time this instance saw, but not past the one slid elsewhere: still signed in.
    expect((await call(app, 'GET', '/me', member)).status).toBe(200)

    // Signed out there (what DELETE /auth/sessions/current writes; that instance's test clock is behind this one's).
    await other.deps.db.run(sql`DELETE FROM sessions WHERE user_id = ${member.userId}`)
    await expectProblem(await call(app, 'GET', '/me', member), 401, 'unauthorized')
  })

  test("a member's role lowered elsewhere reaches their browser session at once", async () => {
    const member = await addMember(app, owner.tenantId, 'operator')
    const write = () => call(app, 'POST', '/groups', member, { json: { name: `s-${crypto.randomUUID().slice(0, 8)}` } })
    expect((await write()).status).toBe(201)
    await other.deps.db.run(sql`UPDATE users SET role = 'viewer' WHERE id = ${member.userId}`)
    await expectProblem(await write(), 403, 'forbidden')
  })
})

test('a request whose kept verification the counter did not confirm is counted once, not twice', async () => {
  const limited = await startTestApp({ RATE_LIMIT_TOKEN_PER_MINUTE: '3' })
  try {
    const member = await newTenant(limited, 'verified-pat-count')
    const { token } = await mintPat(limited, member)
    expect((await call(limited, 'GET', '/me', token)).status).toBe(200)
    // Any change a caller is made of moves the counter: here another token's revocation.
    const spare = await mintPat(limited, member)
    expect((await call(limited, 'DELETE', `/tokens/${spare.id}`, member)).status).toBe(204)
    expect((await call(limited, 'GET', '/me', token)).status).toBe(200)
    expect((await call(limited, 'GET', '/me', token)).status).toBe(200)
    await expectProblem(await call(limited, 'GET', '/me', token), 429, 'rate_limited')
  } finally {
    await limited.close()
  }
})

test.if(process.env.GPUHQ_TEST_DATABASE === 'postgres')(
  'on PostgreSQL a kept verification costs no statement of its own; an unconfirmed one reads the counter and the rows again',
  async () => {
    const member = await addMember(app, owner.tenantId, 'viewer')
    const { token } = await mintPat(app, member)
    for (const caller of [token, member] as const) {
      const cost = async () => {
        const before = roundTrips(app.deps.db)!.statements
        expect((await call(app, 'GET', '/me', caller)).status).toBe(200)
        return roundTrips(app.deps.db)!.statements - before
      }
      await cost()
      const steady = await cost()
      expect(await cost()).toBe(steady)
      // Any change a caller is made of: the next request reads the counter and the three rows afresh.
      await other.deps.db.run(sql`UPDATE tenants SET plan_code = plan_code WHERE id = ${owner.tenantId}`)
      const spare = await mintPat(app, member)
      await other.deps.db.run(sql`DELETE FROM access_tokens WHERE id = ${spare.id}`)
      expect(await cost()).toBe(steady + 4)
      expect(await cost()).toBe(steady)
    }
  },
)
