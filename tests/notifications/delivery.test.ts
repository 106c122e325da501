import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { onlineServer } from '../support/commands'
import { api, closeAllAgents, newOwner, ok, type Owner, type RawAgent } from '../support/fleet'
import { insertServer } from '../support/access'
import { startFakeSmtp, type FakeSmtp } from '../support/smtp'
import { startTelegram, type FakeTelegram } from '../support/telegram'

/**
 * Issue 19, delivery: notifications produced by their real causes (a maintenance declaration, an
 * error the agent reports) go out through a Telegram chat (the Bot API fake) and email (a local SMTP
 * server) as the rules say; quiet hours hold a non-critical one until the window ends while a
 * critical one goes at once; Telegram's 429 retry_after is honoured; a chat that blocked the bot is
 * paused with the reason; repeats are grouped; the history, a delivery's attempts and the test send.
 */

const TOKEN = '424242:AAE-gpuhq-delivery-token-987654'
const CHAT = 61_000_042

let tg: FakeTelegram
let smtp: FakeSmtp
let app: TestApp
let owner: Owner
let rig1: string
let rig2: string
let agent: RawAgent
let agentServer: string

async function dispatch(): Promise<string> {
  const body = await ok<{ outcome: string; detail: string }>(app.fetch('/api/v1/_test/jobs/notifications.dispatch/run', { method: 'POST' }))
  expect(body.outcome).toBe('succeeded')
  return body.detail
}
const advance = (seconds: number) => ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
type Delivery = {
  id: string
  channel: string
  status: string
  attempts: number
  next_attempt_at: string | null
  sent_at: string | null
  last_error: string | null
}
type Item = { id: string; category: string; title: string; body: string; critical: boolean; deliveries: Delivery[] }
const history = async () => (await ok<{ items: Item[] }>(await api(app, owner, 'GET', '/notifications/history?limit=50'))).items
const latest = async (category: string) => (await history()).find((i) => i.category === category)!
const declare = async (server: string) => ok(await api(app, owner, 'PUT', `/servers/${server}/maintenance`, { json: { reason: 'fans' } }))
const endMaintenance = (server: string) => api(app, owner, 'DELETE', `/servers/${server}/maintenance`)

beforeAll(async () => {
  tg = await startTelegram({ token: TOKEN, bot: { username: 'gpuhq_delivery_bot' } })
  smtp = await startFakeSmtp()
  app = await startTestApp({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_URL: tg.url, SMTP_URL: smtp.url })
  owner = await newOwner(app, 'deliver', 'pro')
  rig1 = await insertServer(app, owner.tenantId, 'rig-1')
  rig2 = await insertServer(app, owner.tenantId, 'rig-2')
  ;({ server_id: agentServer, agent } = await onlineServer(app, owner))
  // The chat: a code sent to the bot; the email: the account address.
  const { code } = await ok<{ code: string }>(await api(app, owner, 'POST', '/notifications/chat/link'), 201)
  tg.userSends({ id: CHAT, first_name: 'Ops' }, `/start ${code}`)
  await dispatch()
  await ok(await api(app, owner, 'POST', '/notifications/email/connect', { json: {} }))
  tg.sent.splice(0)
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
  await tg.close()
  await smtp.close()
})

describe('from the cause to the channels', () => {
  test('a maintenance declaration notifies the chat (maint is not critical: no email)', async () => {
    await declare(rig1)
    await dispatch()
    const n = await latest('maint')
    expect(n).toMatchObject({ title: 'Maintenance declared: rig-1', critical: false })
    expect(n.deliveries.map((d) => [d.channel, d.status])).toEqual([['chat', 'sent']])
    expect(tg.sent.map((m) => [m.chat_id, m.text.split('\n')[0]])).toEqual([[CHAT, 'Maintenance declared: rig-1']])
  })

  test('an error the agent reports is critical: chat and email; a repeat within 30 minutes is grouped', async () => {
    agent.event('gpu.xid', 'error', 'Xid 79: GPU has fallen off the bus')
    await agent.barrier()
    agent.event('gpu.xid', 'error', 'Xid 79: GPU has fallen off the bus')
    await agent.barrier()
    await dispatch()
    const errors = (await history()).filter((i) => i.category === 'error')
    expect(errors).toHaveLength(1)
    expect(errors[0]!.critical).toBe(true)
    expect(errors[0]!.deliveries.map((d) => [d.channel, d.status]).sort()).toEqual([
      ['chat', 'sent'],
      ['email', 'sent'],
    ])
    const mail = await smtp.waitForMail(owner.email)
    expect(mail.subject).toContain('Agent reported an error')
    expect(mail.text).toContain('Xid 79')
  })
})

describe('quiet hours', () => {
  test('a non-critical notification waits for the end of the window; a critical one goes through it', async () => {
    // The owner's timezone is UTC: a window from an hour ago to an hour ahead covers now.
    const now = new Date(app.deps.clock.nowUs() / 1000)
    const hhmm = (d: Date) => d.toISOString().slice(11, 16)
    const from = hhmm(new Date(now.getTime() - 3600_000))
    const to = hhmm(new Date(now.getTime() + 3600_000))
    await ok(await api(app, owner, 'PUT', '/notifications/settings', { json: { quiet_hours: { enabled: true, from, to } } }))
    tg.sent.splice(0)
    await declare(rig2)
    agent.event('disk.full', 'critical', 'root filesystem full')
    await agent.barrier()
    await dispatch()
    const maint = await latest('maint')
    const waiting = maint.deliveries[0]!
    expect(waiting).toMatchObject({ channel: 'chat', status: 'queued', attempts: 0 })
    const release = Date.parse(waiting.next_attempt_at!)
    expect(release - now.getTime()).toBeGreaterThan(3500_000)
    expect(release - now.getTime()).toBeLessThan(3700_000)
    expect(tg.sent.map((m) => m.text.split('\n')[0])).toEqual(['Agent reported an error: ' + (await serverName(agentServer))])
    await advance(3700)
    await dispatch()
    expect((await latest('maint')).deliveries[0]!.status).toBe('sent')
    await ok(await api(app, owner, 'PUT', '/notifications/settings', { json: { quiet_hours: { enabled: false, from, to } } }))
  })
})

async function serverName(id: string): Promise<string> {
  return (await ok<{ name: string }>(await api(app, owner, 'GET', `/servers/${id}`))).name
}

describe('Telegram answers', () => {
  test('429: the delivery waits retry_after and goes on the next run after it; every attempt is recorded', async () => {
    await endMaintenance(rig1)
    tg.rateLimit({ retryAfter: 7 })
    await declare(rig1)
    await dispatch()
    const d = (await latest('maint')).deliveries[0]!
    expect(d).toMatchObject({ status: 'queued', attempts: 1 })
    const detail = await ok<{ attempt_log: { at: string; outcome: string; http_status: number | null; error: string | null }[]; next_attempt_at: string }>(
      await api(app, owner, 'GET', `/notifications/deliveries/${d.id}`),
    )
    expect(detail.attempt_log).toEqual([{ at: expect.any(String), outcome: 'retry', http_status: 429, error: 'Too Many Requests: retry after 7' }])
    expect(Date.parse(detail.next_attempt_at) - Date.parse(detail.attempt_log[0]!.at)).toBe(7000)
    await dispatch()
    expect((await latest('maint')).deliveries[0]!.status).toBe('queued')
    await advance(8)
    await dispatch()
    const after = await ok<{ status: string; attempt_log: { outcome: string }[] }>(await api(app, owner, 'GET', `/notifications/deliveries/${d.id}`))
    expect(after.status).toBe('sent')
    expect(after.attempt_log.map((a) => a.outcome)).toEqual(['retry', 'sent'])
  })

  test('a chat that blocked the bot: the delivery fails and the chat channel is paused with the reason', async () => {
    await endMaintenance(rig2)
    tg.block(CHAT)
    await declare(rig2)
    await dispatch()
    expect((await latest('maint')).deliveries[0]).toMatchObject({ status: 'failed', last_error: 'Forbidden: bot was blocked by the user' })
    const settings = await ok<{ channels: { chat: { status: string; disabled_reason: string | null } } }>(
      await api(app, owner, 'GET', '/notifications/settings'),
    )
    expect(settings.channels.chat).toMatchObject({ status: 'paused', disabled_reason: 'Telegram: Forbidden: bot was blocked by the user' })
    // While paused, a new notification's chat delivery is skipped, not queued (past the grouping window).
    await endMaintenance(rig2)
    await advance(31 * 60)
    await declare(rig2)
    expect((await latest('maint')).deliveries[0]).toMatchObject({ status: 'skipped' })
    tg.unblock(CHAT)
    await ok(await api(app, owner, 'PUT', '/notifications/settings', { json: { channels: { chat: { status: 'connected' } } } }))
  })
})

describe('the weekly report', () => {
  test('notifications.weekly queues one report per tenant with servers, once per week however often it runs', async () => {
    for (let i = 0; i < 2; i++) {
      const run = await ok<{ outcome: string; detail: string }>(app.fetch('/api/v1/_test/jobs/notifications.weekly/run', { method: 'POST' }))
      expect(run.outcome).toBe('succeeded')
    }
    const weekly = (await history()).filter((i) => i.category === 'weekly')
    expect(weekly).toHaveLength(1)
    expect(weekly[0]!.title).toMatch(/^Your week: \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2}$/)
    expect(weekly[0]!.body).toContain('3 servers managed')
    expect(weekly[0]!.critical).toBe(false)
    await dispatch()
    expect((await history()).find((i) => i.category === 'weekly')!.deliveries.map((d) => [d.channel, d.status])).toEqual([['chat', 'sent']])
  })
})

describe('reading and testing', () => {
  test('POST /notifications/test sends through every connected channel at once', async () => {
    const sentBefore = tg.sent.length
    const r = await ok<{ notification_id: string; deliveries: Delivery[] }>(await api(app, owner, 'POST', '/notifications/test', { json: {} }))
    expect(r.deliveries.map((d) => [d.channel, d.status]).sort()).toEqual([
      ['chat', 'sent'],
      ['email', 'sent'],
    ])
    expect(tg.sent.length).toBe(sentBefore + 1)
    const only = await ok<{ deliveries: Delivery[] }>(await api(app, owner, 'POST', '/notifications/test', { json: { channels: ['chat'] } }))
    expect(only.deliveries.map((d) => d.channel)).toEqual(['chat'])
  })

  test("history is newest first and paginated; another tenant's delivery is 404", async () => {
    const page = await ok<{ items: Item[]; next_cursor: string | null }>(await api(app, owner, 'GET', '/notifications/history?limit=2'))
    expect(page.items).toHaveLength(2)
    expect(page.next_cursor).not.toBeNull()
    const next = await ok<{ items: Item[] }>(await api(app, owner, 'GET', `/notifications/history?limit=2&cursor=${encodeURIComponent(page.next_cursor!)}`))
    expect(next.items[0]!.id < page.items[1]!.id).toBe(true)
    const stranger = await newOwner(app, 'deliver-stranger')
    const res = await api(app, stranger, 'GET', `/notifications/deliveries/${page.items[0]!.deliveries[0]!.id}`)
    expect(res.status).toBe(404)
    expect((await ok<{ items: Item[] }>(await api(app, stranger, 'GET', '/notifications/history'))).items).toEqual([])
  })
})
