import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { call, setAccountState } from '../support/access'
import type { TestApp } from '../support/app'
import { expectProblem, type Problem } from '../support/problem'
import {
  addPlan,
  currentPlan,
  getQuote,
  newMember,
  nextDayAt,
  order,
  orderOk,
  type Subscription,
  startSubscriptionApp,
  subscription,
  tenantOn,
} from '../support/subscription'

let app: TestApp
beforeAll(async () => {
  app = await startSubscriptionApp()
  await nextDayAt(app, 10)
})
afterAll(() => app.close())

const changesOf = async (tenantId: string) =>
  (await app.deps.db.all(sql`SELECT id, status, target_plan FROM subscription_changes WHERE tenant_id = ${tenantId} ORDER BY id`)) as {
    id: string
    status: string
    target_plan: string
  }[]

describe('POST /subscription/changes refusals, each leaving nothing behind', () => {
  test('a frozen account is denied with 403 account_frozen (the quote stays readable)', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '50.00' })
    await setAccountState(app, owner.tenantId, 'frozen')
    await expectProblem((await order(app, owner, { target_plan: 'pro' })).res, 403, 'account_frozen')
    await expectProblem((await order(app, owner, { target_plan: 'free' })).res, 403, 'account_frozen')
    expect((await getQuote(app, owner, 'pro')).status).toBe(200)
    expect(await changesOf(owner.tenantId)).toEqual([])
    expect((await currentPlan(app, owner))!.code).toBe('starter')
  })

  test("a fleet above the target's server limit answers 409 server_limit_reached: three servers cannot go to free", async () => {
    const owner = await tenantOn(app, 'starter', { servers: 3 })
    const p = await expectProblem((await order(app, owner, { target_plan: 'free' })).res, 409, 'server_limit_reached')
    expect(p.detail).toContain('3')
    expect(await changesOf(owner.tenantId)).toEqual([])
  })

  test('the limit applies to upgrades too, and a fleet exactly at the limit is allowed', async () => {
    const small = await addPlan(app, { price: '3.00', serversMax: '2' })
    const over = await tenantOn(app, 'starter', { servers: 3, balance: '50.00' })
    await expectProblem((await order(app, over, { target_plan: small })).res, 409, 'server_limit_reached')
    const at = await tenantOn(app, 'starter', { servers: 2, balance: '50.00' })
    expect((await orderOk(app, at, { target_plan: small }, 200)).status).toBe('applied')
    const one = await tenantOn(app, 'starter', { servers: 1 })
    expect((await orderOk(app, one, { target_plan: 'free' }, 201)).status).toBe('scheduled')
  })

  test('ordering the plan the tenant is already on answers 409 conflict', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '5.00' })
    await expectProblem((await order(app, owner, { target_plan: 'starter' })).res, 409, 'conflict')
    expect(await changesOf(owner.tenantId)).toEqual([])
  })

  test('a contract-priced target answers 403 feature_not_entitled; an unknown plan 404; no plan 409 plan_required', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '1000.00' })
    await expectProblem((await order(app, owner, { target_plan: 'enterprise' })).res, 403, 'feature_not_entitled')
    await expectProblem((await order(app, owner, { target_plan: 'platinum' })).res, 404, 'not_found')
    const planless = await tenantOn(app, null)
    await expectProblem((await order(app, planless, { target_plan: 'pro' })).res, 409, 'plan_required')
    expect([...(await changesOf(owner.tenantId)), ...(await changesOf(planless.tenantId))]).toEqual([])
  })

  test('malformed bodies answer 422: a bad plan code, a missing plan, a non-UUID topup_id, an unknown field', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '5.00' })
    for (const body of [
      { target_plan: 'Pro' },
      { target_plan: '9lives' },
      {},
      { target_plan: 'pro', topup_id: 'nope' },
      { target_plan: 'pro', plan: 'pro' },
      { target_plan: 4 },
    ])
      await expectProblem((await order(app, owner, body)).res, 422, 'validation_failed')
    expect(await changesOf(owner.tenantId)).toEqual([])
  })

  test('a viewer may quote but not order (403 forbidden)', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '5.00' })
    const viewer = await newMember(app, owner.tenantId, 'viewer')
    expect((await getQuote(app, viewer, 'pro')).status).toBe(200)
    await expectProblem((await order(app, viewer, { target_plan: 'pro' })).res, 403, 'forbidden')
  })
})

describe('Idempotency-Key on an order', () => {
  test('a retry with the same key and body replays the same change; the order runs once', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '5.00' })
    const key = { 'idempotency-key': `upgrade-${owner.tenantId}` }
    const first = await order(app, owner, { target_plan: 'pro' }, key)
    expect(first.status).toBe(200)
    const again = await order(app, owner, { target_plan: 'pro' }, key)
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: first.body })
    expect(await changesOf(owner.tenantId)).toHaveLength(1)
    // Without the key the same request is a new order, refused because the tenant is on pro now.
    await expectProblem((await order(app, owner, { target_plan: 'pro' })).res, 409, 'conflict')
  })

  test('a replayed 201 (scheduled) keeps its status and id; the same key with another body answers 409 idempotency_conflict', async () => {
    const owner = await tenantOn(app, 'pro', { servers: 1, balance: '5.00' })
    const key = { 'idempotency-key': 'downgrade-once' }
    const first = await order(app, owner, { target_plan: 'starter' }, key)
    expect(first.status).toBe(201)
    const again = await order(app, owner, { target_plan: 'starter' }, key)
    expect({ status: again.status, id: again.body.id, s: again.body.status }).toEqual({ status: 201, id: first.body.id, s: 'scheduled' })
    await expectProblem((await order(app, owner, { target_plan: 'free' }, key)).res, 409, 'idempotency_conflict')
    expect(await changesOf(owner.tenantId)).toEqual([{ id: first.body.id, status: 'scheduled', target_plan: 'starter' }])
  })
})

describe('at most one live pending change', () => {
  test('a second unconditional order answers 409 change_already_pending and leaves the first as it was', async () => {
    const owner = await tenantOn(app, 'pro', { servers: 1 })
    const first = await orderOk(app, owner, { target_plan: 'starter' }, 201)
    await expectProblem((await order(app, owner, { target_plan: 'free' })).res, 409, 'change_already_pending')
    expect((await subscription(app, owner)).body.pending_change).toEqual(first)
    expect(await changesOf(owner.tenantId)).toHaveLength(1)
  })

  test('six simultaneous unconditional orders leave exactly one pending change', async () => {
    const owner = await tenantOn(app, 'pro', { servers: 1 })
    const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => order(app, owner, { target_plan: i % 2 ? 'starter' : 'free' })))
    const statuses = replies.map((r) => r.status).sort()
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409])
    for (const r of replies.filter((r) => r.status === 409)) expect((r.body as unknown as Problem).code).toBe('change_already_pending')
    expect(await changesOf(owner.tenantId)).toHaveLength(1)
  })

  test('an awaiting-payment upgrade is pending too', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1 })
    await orderOk(app, owner, { target_plan: 'pro' }, 201)
    await expectProblem((await order(app, owner, { target_plan: 'free' })).res, 409, 'change_already_pending')
  })

  test('with If-Match on the subscription version the new order replaces the pending one, which is cancelled', async () => {
    const owner = await tenantOn(app, 'pro', { servers: 1 })
    const first = await orderOk(app, owner, { target_plan: 'starter' }, 201)
    const { body, etag } = await subscription(app, owner)
    expect(etag).toBe(`"${body.version}"`)
    const second = await orderOk(app, owner, { target_plan: 'free' }, 201, { 'if-match': etag })
    expect(second).toMatchObject({ status: 'scheduled', target_plan: 'free' })
    expect(second.id).not.toBe(first.id)
    const s = (await subscription(app, owner)).body
    expect(s.pending_change).toEqual(second)
    expect(s.version).toBeGreaterThan(body.version)
    expect((await changesOf(owner.tenantId)).map((c) => [c.id, c.status])).toEqual([
      [first.id, 'cancelled'],
      [second.id, 'scheduled'],
    ])
  })

  test('a replacement may be applied at once: a pending downgrade replaced by a covered upgrade', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '5.00' })
    const first = await orderOk(app, owner, { target_plan: 'free' }, 201)
    const { etag } = await subscription(app, owner)
    const up = await orderOk(app, owner, { target_plan: 'pro' }, 200, { 'if-match': etag })
    expect(up.status).toBe('applied')
    expect(await subscription(app, owner)).toMatchObject({ body: { plan: { code: 'pro' }, pending_change: null } })
    expect((await changesOf(owner.tenantId)).find((c) => c.id === first.id)!.status).toBe('cancelled')
  })

  test('a stale If-Match answers 412 and changes nothing', async () => {
    const owner = await tenantOn(app, 'pro', { servers: 1 })
    const { etag: old } = await subscription(app, owner)
    const first = await orderOk(app, owner, { target_plan: 'starter' }, 201) // moves the version
    const r = await order(app, owner, { target_plan: 'free' }, { 'if-match': old })
    expect(r.status).toBe(412)
    expect((await subscription(app, owner)).body.pending_change).toEqual(first)
    expect(await changesOf(owner.tenantId)).toHaveLength(1)
  })

  test('If-Match is checked even when nothing is pending: stale → 412, current → accepted', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '5.00' })
    expect((await order(app, owner, { target_plan: 'pro' }, { 'if-match': '"999"' })).status).toBe(412)
    const { etag } = await subscription(app, owner)
    expect((await orderOk(app, owner, { target_plan: 'pro' }, 200, { 'if-match': etag })).status).toBe('applied')
  })
})

describe('GET /subscription', () => {
  test('answers 304 to If-None-Match with the current tag, and 200 with a new tag once the subscription moved', async () => {
    const owner = await tenantOn(app, 'starter', { servers: 1, balance: '5.00' })
    const { body, etag } = await subscription(app, owner)
    expect(body).toMatchObject({ plan: { code: 'starter' }, pending_change: null, last_change: null, account_state: 'active' })
    const same = await call(app, 'GET', '/subscription', owner, { headers: { 'if-none-match': etag } })
    expect(same.status).toBe(304)
    expect(same.headers.get('etag')).toBe(etag)
    expect(await same.text()).toBe('')
    await orderOk(app, owner, { target_plan: 'pro' }, 200)
    const moved = await call(app, 'GET', '/subscription', owner, { headers: { 'if-none-match': etag } })
    expect(moved.status).toBe(200)
    expect(moved.headers.get('etag')).not.toBe(etag)
    expect(((await moved.json()) as Subscription).plan!.code).toBe('pro')
  })

  test('without a session it answers 401', async () => {
    await expectProblem(await call(app, 'GET', '/subscription', null), 401, 'unauthorized')
  })
})
