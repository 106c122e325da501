import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../../src/config'
import { call, newTenant, type Member } from '../support/access'
import { freePort, startTestApp, TEST_SECRET_KEY, type TestApp } from '../support/app'
import { startTelegram, type FakeTelegram } from '../support/telegram'
import { eventually } from '../support/fleet'

/**
 * Issue 19, the webhook alternative to getUpdates polling (TELEGRAM_UPDATES=webhook): the dispatch
 * job registers the webhook under PUBLIC_URL with a secret token, the Bot API fake POSTs the bot's
 * updates there, a code sent to the bot links its chat, and a request without the right
 * X-Telegram-Bot-Api-Secret-Token is refused before anything is read. While polling (the default)
 * the webhook address does not exist.
 */

const TOKEN = '777000:AAE-gpuhq-webhook-token-24680'
const PATH = '/api/v1/notifications/telegram/webhook'
const CHAT = 61_000_777

let tg: FakeTelegram
let app: TestApp
let owner: Member

beforeAll(async () => {
  tg = await startTelegram({ token: TOKEN, webhookRetryDelayMs: 10 })
  const port = freePort()
  app = await startTestApp(
    { TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_URL: tg.url, TELEGRAM_UPDATES: 'webhook', PUBLIC_URL: `http://127.0.0.1:${port}` },
    { port },
  )
  owner = await newTenant(app, 'webhook')
})
afterAll(async () => {
  await app.close()
  await tg.close()
})

async function dispatch(): Promise<string> {
  const res = await app.fetch('/api/v1/_test/jobs/notifications.dispatch/run', { method: 'POST' })
  const body = (await res.json()) as { outcome: string; detail: string }
  expect(body.outcome).toBe('succeeded')
  return body.detail
}
async function code(): Promise<string> {
  const res = await call(app, 'POST', '/notifications/chat/link', owner)
  expect(res.status).toBe(201)
  return ((await res.json()) as { code: string }).code
}
async function chat() {
  const res = await call(app, 'GET', '/notifications/settings', owner)
  return ((await res.json()) as { channels: { chat: { status: string; destination_masked: string | null } } }).channels.chat
}
const secret = () => tg.requests.find((r) => r.apiMethod === 'setWebhook')!.params.secret_token!
const update = (id: number, text: string, chatId = CHAT) => ({
  update_id: id,
  message: { message_id: 1, date: 1, chat: { id: chatId, type: 'private', first_name: 'Ops' }, from: { id: chatId, is_bot: false, first_name: 'Ops' }, text },
})
const post = (body: unknown, headers: Record<string, string>) => app.fetch(PATH, { method: 'POST', json: body, headers })

describe('the webhook', () => {
  test('the dispatch job registers it once, under PUBLIC_URL, with a secret token, and never calls getUpdates', async () => {
    expect(await dispatch()).toContain('chat: webhook set now')
    expect(await dispatch()).toContain('chat: webhook set;')
    const sets = tg.requests.filter((r) => r.apiMethod === 'setWebhook')
    expect(sets).toHaveLength(1)
    expect(sets[0]!.params.url).toBe(`${app.url}${PATH}`)
    expect(secret()).toMatch(/^[A-Za-z0-9_-]{32,256}$/)
    expect(JSON.parse(sets[0]!.params.allowed_updates!)).toEqual(['message'])
    expect(tg.requests.filter((r) => r.apiMethod === 'getUpdates')).toHaveLength(0)
    // The secret is in no log line.
    expect(app.rawLogs.join('\n')).not.toContain(secret())
  })

  test('a forged update (no secret, or a wrong one) is refused with 401 and spends nothing; the real one then links the chat', async () => {
    const c = await code()
    const none = await post(update(1, c, 666), {})
    expect(none.status).toBe(401)
    expect(((await none.json()) as { code: string }).code).toBe('unauthorized')
    const wrong = await post(update(2, c, 666), { 'x-telegram-bot-api-secret-token': `${secret().slice(0, -1)}x` })
    expect(wrong.status).toBe(401)
    expect((await chat()).status).toBe('not_connected')

    tg.userSends({ id: CHAT, first_name: 'Ops' }, `/start ${c}`)
    await tg.deliverPending()
    const delivered = tg.webhookDeliveries.at(-1)!
    expect(delivered).toMatchObject({ secretHeader: true, status: 200, error: null })
    const channel = await chat()
    expect(channel.status).toBe('connected')
    expect(channel.destination_masked).not.toContain(String(CHAT))
    // The confirmation goes after Telegram has its answer.
    await eventually(() => tg.sent.some((m) => m.chat_id === CHAT))
    expect(tg.sent.filter((m) => m.chat_id === CHAT).map((m) => m.text)).toEqual(['gpuhq: this chat now receives your fleet notifications.'])
  })

  test('an update Telegram repeats links nothing twice; junk with the right secret is accepted and ignored', async () => {
    const c = await code()
    const first = await post(update(50, c, 4242), { 'x-telegram-bot-api-secret-token': secret() })
    expect(first.status).toBe(200)
    expect(await first.json()).toEqual({ ok: true })
    const version = ((await (await call(app, 'GET', '/notifications/settings', owner)).json()) as { version: number }).version
    const again = await post(update(50, c, 4242), { 'x-telegram-bot-api-secret-token': secret() })
    expect(again.status).toBe(200)
    expect(((await (await call(app, 'GET', '/notifications/settings', owner)).json()) as { version: number }).version).toBe(version)
    for (const junk of [{ update_id: 51 }, { update_id: 52, message: { chat: { id: 'x' }, text: c } }, [1, 2], 'text'])
      expect((await post(junk, { 'x-telegram-bot-api-secret-token': secret() })).status).toBe(200)
  })
})

describe('while polling', () => {
  test('the webhook address answers 404, whatever the header', async () => {
    const polling = await startTestApp({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_URL: tg.url })
    try {
      const res = await polling.fetch(PATH, { method: 'POST', json: update(1, 'ABCDEFGH'), headers: { 'x-telegram-bot-api-secret-token': 'anything' } })
      expect(res.status).toBe(404)
    } finally {
      await polling.close()
    }
  })

  test('TELEGRAM_UPDATES is checked at startup', () => {
    const base = { NODE_ENV: 'test', PUBLIC_URL: 'http://gpuhq.test', SECRET_KEY: TEST_SECRET_KEY, DATABASE_URL: 'file:/tmp/x.db' }
    expect(() => loadConfig({ ...base, TELEGRAM_UPDATES: 'webhook' })).toThrow(ConfigError)
    expect(() => loadConfig({ ...base, TELEGRAM_UPDATES: 'push', TELEGRAM_BOT_TOKEN: TOKEN })).toThrow(ConfigError)
    expect(loadConfig({ ...base, TELEGRAM_UPDATES: 'webhook', TELEGRAM_BOT_TOKEN: TOKEN }).telegram.updates).toBe('webhook')
    expect(loadConfig({ ...base, TELEGRAM_BOT_TOKEN: TOKEN }).telegram.updates).toBe('polling')
  })
})
