import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { formatTimestamp } from '../../src/platform/time'
import { insertServer } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { api, newOwner, ok, type Owner } from '../support/fleet'
import { checkoutPath, type Topup } from '../support/payments'
import { startTelegram, type FakeTelegram } from '../support/telegram'

/**
 * Issue 19, the producers added last: payment outcomes that credit nothing (a sandbox payment that
 * expires, a top-up that expires unpaid and billing.reconcile closes, a provider's answer that
 * sends it to review) and a maintenance window announced on a marketplace (through gpuhq, or in the
 * platform's own console and learned by the sync). Each notifies once from its real cause, through
 * the one path every top-up change and every remote maintenance window go through.
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
const history = async () => (await ok<{ items: Item[] }>(api(app, owner, 'GET', '/notifications/history?limit=100'))).items
const titled = async (prefix: string) => (await history()).filter((i) => i.title.startsWith(prefix))
const runJob = async (name: string) => {
  const body = await ok<{ outcome: string; detail: string }>(app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' }))
  expect(body).toMatchObject({ outcome: 'succeeded' })
  return body.detail
}
const advance = (seconds: number) => ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
const topup = async (amount: string): Promise<Topup> =>
  ok<Topup>(api(app, owner, 'POST', '/billing/topups', { json: { amount_usd: amount, payment_method: 'card', purpose: { kind: 'wallet' } } }), 201)
const pay = (t: Topup, outcome: string) => ok(app.fetch(checkoutPath(t), { method: 'POST', json: { outcome } }))

beforeAll(async () => {
  tg = await startTelegram({ token: TOKEN })
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: VAST_OWNER, email: 'host@example.com', keys: [{ key: KEY_A, label: 'p' }] }] })
  app = await startTestApp({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_URL: tg.url, PAYMENT_PROVIDERS: 'sandbox', MARKETPLACE_A_API_URL: simA.url })
  owner = await newOwner(app, 'producers', 'pro')
  rig = insertServer(app, owner.tenantId, 'rig-p')
  simA.putMachine(VAST_OWNER, 801, { hostname: 'rig-801' })
  await ok(api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY_A } }))
  await ok(api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: rig, marketplace: 'marketplace_a', external_machine_id: '801' } }), 201)
  const { code } = await ok<{ code: string }>(api(app, owner, 'POST', '/notifications/chat/link'), 201)
  tg.userSends({ id: CHAT, first_name: 'Ops' }, code)
  await runJob('notifications.dispatch')
  tg.sent.splice(0)
})
afterAll(async () => {
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
    const got = await ok<Topup>(api(app, owner, 'GET', `/billing/topups/${t.id}`))
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
    const got = await ok<Topup>(api(app, owner, 'GET', `/billing/topups/${t.id}`))
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
      api(app, owner, 'PUT', `/marketplaces/links/${rig}/marketplace_a/maintenance`, {
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
    await ok(api(app, owner, 'DELETE', `/marketplaces/links/${rig}/marketplace_a/maintenance`), 204)
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
