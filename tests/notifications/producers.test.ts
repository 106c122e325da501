import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { formatTimestamp } from '../../src/platform/time'
import { insertServer } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { onlineServer } from '../support/commands'
import { api, closeAllAgents, eventually, newOwner, ok, RawAgent, type Owner } from '../support/fleet'
import { adjust, clockTo, dayStartUs, midNextMonth, orderOk, tenantOn, US_PER_HOUR } from '../support/subscription'
import { checkoutPath, type Topup } from '../support/payments'
import { startTelegram, type FakeTelegram } from '../support/telegram'

/**
 * Issue 19, producers from their real causes: a rental the marketplace sync sees start and end, a
 * server going offline (a flapping one notified once), an offer published, a plan change refused at
 * firing, payment outcomes (credited, or not: a sandbox payment that expires, a top-up that expires
 * unpaid and billing.reconcile closes, a provider's answer that sends it to review) and a
 * maintenance window announced on a marketplace (through gpuhq, or in the platform's own console
 * and learned by the sync). Each notifies once, through the one path its cause goes through.
 */

const TOKEN = '515151:AAE-gpuhq-producers-token-123456'
const CHAT = 61_000_515
const KEY_A = 'vast-producers-key-0123456789abcd'
const VAST_OWNER = 7272
const US = 1_000_000

let tg: FakeTelegram
let simA: MarketplaceASim
let app: TestApp
let owner: Owner
let rig: string

type Item = { id: string; category: string; title: string; body: string; critical: boolean; deliveries: { channel: string; status: string }[] }
const history = async () => (await ok<{ items: Item[] }>(await api(app, owner, 'GET', '/notifications/history?limit=100'))).items
const titled = async (prefix: string) => (await history()).filter((i) => i.title.startsWith(prefix))
const runJob = async (name: string) => {
  const body = await ok<{ outcome: string; detail: string }>(app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' }))
  expect(body).toMatchObject({ outcome: 'succeeded' })
  return body.detail
}
const advance = (seconds: number) => ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
const topup = async (amount: string): Promise<Topup> =>
  ok<Topup>(await api(app, owner, 'POST', '/billing/topups', { json: { amount_usd: amount, payment_method: 'card', purpose: { kind: 'wallet' } } }), 201)
const pay = (t: Topup, outcome: string) => ok(app.fetch(checkoutPath(t), { method: 'POST', json: { outcome } }))

beforeAll(async () => {
  tg = await startTelegram({ token: TOKEN })
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: VAST_OWNER, email: 'host@example.com', keys: [{ key: KEY_A, label: 'p' }] }] })
  app = await startTestApp({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_URL: tg.url, PAYMENT_PROVIDERS: 'sandbox', MARKETPLACE_A_API_URL: simA.url })
  owner = await newOwner(app, 'producers', 'pro')
  rig = await insertServer(app, owner.tenantId, 'rig-p')
  simA.putMachine(VAST_OWNER, 801, { hostname: 'rig-801' })
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY_A } }))
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: rig, marketplace: 'marketplace_a', external_machine_id: '801' } }), 201)
  const { code } = await ok<{ code: string }>(await api(app, owner, 'POST', '/notifications/chat/link'), 201)
  tg.userSends({ id: CHAT, first_name: 'Ops' }, code)
  await runJob('notifications.dispatch')
  tg.sent.splice(0)
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
  await tg.close()
  await simA.stop()
})

describe('payment outcomes that credit nothing', () => {
  test('a sandbox payment that expires notifies the chat once (payment is critical)', async () => {
    const t = await topup('12.50')
    await pay(t, 'expired')
    await runJob('notifications.dispatch')
    const items = await titled('Top-up expired unpaid')
    expect(items).toHaveLength(1)
    expect(items[0]).toMatchObject({ category: 'payment', critical: true })
    expect(items[0]!.body).toContain(t.id)
    expect(items[0]!.body).toContain('12.50 USD')
    // Critical: the default rule sends it by chat and by email; email was never connected here.
    expect(items[0]!.deliveries.map((d) => [d.channel, d.status])).toEqual([
      ['chat', 'sent'],
      ['email', 'skipped'],
    ])
    expect(tg.sent.filter((m) => m.text.startsWith('Top-up expired unpaid'))).toHaveLength(1)
    // The provider reporting the same outcome again, and a reconcile run, move nothing and notify nothing.
    await pay(t, 'expired')
    await runJob('billing.reconcile')
    expect(await titled('Top-up expired unpaid')).toHaveLength(1)
  })

  test('an unpaid top-up past its invoice life is expired by billing.reconcile, and that notifies', async () => {
    const t = await topup('7.00')
    const before = (await titled('Top-up expired unpaid')).length
    await advance(3 * 24 * 3600)
    await runJob('billing.reconcile')
    const got = await ok<Topup>(await api(app, owner, 'GET', `/billing/topups/${t.id}`))
    expect(got.status).toBe('expired')
    const items = await titled('Top-up expired unpaid')
    expect(items).toHaveLength(before + 1)
    expect(items[0]!.body).toContain(t.id)
    await runJob('billing.reconcile')
    expect(await titled('Top-up expired unpaid')).toHaveLength(before + 1)
  })

  test('a payment the service cannot classify sends the top-up to review, and the owner hears of it', async () => {
    const t = await topup('5.00')
    await pay(t, 'unknown')
    const got = await ok<Topup>(await api(app, owner, 'GET', `/billing/topups/${t.id}`))
    expect(got.status).toBe('review')
    const items = await titled('Top-up held for review')
    expect(items).toHaveLength(1)
    expect(items[0]!.body).toContain(t.id)
  })

  test('a credited top-up still says credited, and never "expired"', async () => {
    const before = (await titled('Top-up expired unpaid')).length
    const t = await topup('3.00')
    await pay(t, 'finished')
    expect((await titled('Top-up credited')).some((i) => i.body.includes(t.id))).toBe(true)
    expect(await titled('Top-up expired unpaid')).toHaveLength(before)
  })
})

describe('maintenance announced on a marketplace', () => {
  test('announced through gpuhq: one maint notification naming the platform and the window', async () => {
    const start = Math.floor(app.deps.clock.nowUs() / US) + 86_400
    await ok(
      await api(app, owner, 'PUT', `/marketplaces/links/${rig}/marketplace_a/maintenance`, {
        json: { starts_at: formatTimestamp(start * US), hours: 2, category: 'gpu' },
      }),
    )
    const items = await titled('Maintenance announced: rig-p')
    expect(items).toHaveLength(1)
    expect(items[0]).toMatchObject({ category: 'maint', critical: false })
    expect(items[0]!.body).toContain('marketplace_a')
    expect(items[0]!.body).toContain(formatTimestamp(start * US))
    // The sync reads the same window back from the platform: nothing new.
    await runJob('marketplaces.sync')
    expect(await titled('Maintenance announced: rig-p')).toHaveLength(1)
    await ok(await api(app, owner, 'DELETE', `/marketplaces/links/${rig}/marketplace_a/maintenance`), 204)
    await runJob('marketplaces.sync')
  })

  test("announced in the platform's own console: the sync notices it once", async () => {
    const before = (await titled('Maintenance announced: rig-p')).length
    const start = Math.floor(app.deps.clock.nowUs() / US) + 2 * 86_400
    simA.putMachine(VAST_OWNER, 801, { hostname: 'rig-801', machine_maintenance: [{ start_time: start, duration_hours: 4 }] } as never)
    await runJob('marketplaces.sync')
    const items = await titled('Maintenance announced: rig-p')
    expect(items).toHaveLength(before + 1)
    expect(items[0]!.body).toContain('for 4 h')
    await runJob('marketplaces.sync')
    expect(await titled('Maintenance announced: rig-p')).toHaveLength(before + 1)
    await runJob('notifications.dispatch')
    expect(tg.sent.filter((m) => m.text.startsWith('Maintenance announced: rig-p')).length).toBeGreaterThanOrEqual(1)
  })
})

describe('fleet and marketplace causes', () => {
  test('a rental the sync sees start and then end: one rental notification each', async () => {
    const rental = simA.addRental(801, { kind: 'on_demand', gpus: 1, running: true })
    await runJob('marketplaces.sync')
    await runJob('marketplaces.sync')
    expect(await titled('Rental started: rig-p')).toHaveLength(1)
    simA.removeRental(rental)
    await runJob('marketplaces.sync')
    const ended = await titled('Rental ended: rig-p')
    expect(ended).toHaveLength(1)
    expect(ended[0]).toMatchObject({ category: 'rental', critical: false })
  })

  test('a server going offline notifies once; flapping within 30 minutes is not notified again', async () => {
    const { server_id, agent_token, agent } = await onlineServer(app, owner)
    const { name } = await ok<{ name: string }>(await api(app, owner, 'GET', `/servers/${server_id}`))
    const offline = () => titled(`Server offline: ${name}`)
    agent.heartbeat()
    await agent.barrier()
    await agent.close()
    await eventually(async () => (await offline()).length > 0)
    expect(await offline()).toHaveLength(1)
    expect((await offline())[0]).toMatchObject({ category: 'offline', critical: true })
    // It comes back and drops again ten minutes later: the same condition, grouped.
    await advance(10 * 60)
    const back = await RawAgent.start(app, agent_token)
    back.agent.heartbeat()
    await back.agent.barrier()
    await back.agent.close()
    const drops = async () =>
      ((await app.deps.db.get(sql`SELECT count(*) AS n FROM server_events WHERE server_id = ${server_id} AND kind = 'presence.offline'`)) as { n: number }).n
    await eventually(async () => (await drops()) >= 2)
    expect(await drops()).toBe(2)
    expect(await offline()).toHaveLength(1)
    // Past the 30-minute window a new drop is news again.
    await advance(31 * 60)
    const later = await RawAgent.start(app, agent_token)
    later.agent.heartbeat()
    await later.agent.barrier()
    await later.agent.close()
    await eventually(async () => (await offline()).length >= 2)
    expect(await offline()).toHaveLength(2)
  })

  test('an offer published through gpuhq notifies its price', async () => {
    const r = await api(app, owner, 'PUT', `/marketplaces/links/${rig}/marketplace_a/offer`, { json: { price_gpu_hour: '0.45' } })
    expect(r.status).toBe(200)
    const items = await titled('Offer updated: rig-p')
    expect(items).toHaveLength(1)
    expect(items[0]).toMatchObject({ category: 'price', critical: false })
    expect(items[0]!.body).toContain('marketplace_a')
  })
})

describe('a plan change refused at firing (Events 3)', () => {
  test('the tenant gets a payment notification naming the plan and the reason', async () => {
    await midNextMonth(app)
    const member = await tenantOn(app, 'pro', { servers: 2, balance: '10.00' })
    const c = await orderOk(app, member, { target_plan: 'starter' }, 201)
    await adjust(app, member.tenantId, '-10.05')
    await clockTo(app, dayStartUs(c.billing_effective_day) + US_PER_HOUR)
    await runJob('subscription.fire')
    const rows = (await app.deps.db.all(sql`SELECT title, body FROM notifications WHERE tenant_id = ${member.tenantId} AND category = 'payment'`)) as {
      title: string
      body: string
    }[]
    expect(rows).toEqual([{ title: 'Plan change to starter refused', body: expect.stringContaining('reserve_not_covered') }])
  })
})
