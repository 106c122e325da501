import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, newTenant, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { startTelegram, type FakeTelegram } from '../support/telegram'

/**
 * Issue 19, linking a Telegram chat against a local fake of the Bot API speaking its wire format:
 * a one-time code, sent to the bot, read through getUpdates by the notifications.dispatch job,
 * connects that chat (with a confirmation in it); a code works once and expires; updates are handled
 * once (the offset); a service without a bot token answers 503; the token is never logged.
 */

const TOKEN = '987654:AAE-gpuhq-test-token-0123456789'

let tg: FakeTelegram
let app: TestApp
let owner: Member
beforeAll(async () => {
  tg = await startTelegram({ token: TOKEN, bot: { username: 'gpuhq_test_bot' } })
  app = await startTestApp({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_URL: tg.url })
  owner = await newTenant(app, 'chat')
})
afterAll(async () => {
  await app.close()
  await tg.close()
})

type Link = { code: string; expires_at: string; bot_username: string | null; deep_link: string | null; instructions: string }
async function link(caller: Member = owner): Promise<Link> {
  const res = await call(app, 'POST', '/notifications/chat/link', caller)
  expect(res.status).toBe(201)
  return (await res.json()) as Link
}
async function dispatch(): Promise<string> {
  const res = await app.fetch('/api/v1/_test/jobs/notifications.dispatch/run', { method: 'POST' })
  const body = (await res.json()) as { outcome: string; detail: string }
  expect(body.outcome).toBe('succeeded')
  return body.detail
}
async function chatChannel(caller: Member = owner) {
  const res = await call(app, 'GET', '/notifications/settings', caller)
  return (await res.json()) as { channels: { chat: { status: string; destination_masked: string | null; verified_at: string | null } }; version: number }
}

describe('linking a chat', () => {
  test('a code, sent to the bot, connects that chat on the next dispatch run, with a confirmation in the chat', async () => {
    const l = await link()
    expect(l.code).toMatch(/^[A-Z0-9]{8}$/)
    expect(l.bot_username).toBe('gpuhq_test_bot')
    expect(l.deep_link).toBe(`https://t.me/gpuhq_test_bot?start=${l.code}`)
    const before = await chatChannel()
    expect(before.channels.chat.status).toBe('not_connected')
    tg.userSends({ id: 55501234, first_name: 'Ada' }, `/start ${l.code}`)
    expect(await dispatch()).toContain('1 chats linked')
    const after = await chatChannel()
    expect(after.channels.chat).toMatchObject({ status: 'connected', destination_masked: 'chat •••1234' })
    expect(after.channels.chat.verified_at).not.toBeNull()
    expect(after.version).toBeGreaterThan(before.version)
    expect(tg.sent.map((m) => m.chat_id)).toEqual([55501234])
  })

  test('a code works once: another chat sending it is not linked; updates already handled are not read again', async () => {
    const l = await link()
    tg.userSends({ id: 77700001 }, l.code.toLowerCase())
    tg.userSends({ id: 77700002 }, l.code)
    expect(await dispatch()).toContain('2 updates read, 1 chats linked')
    expect((await chatChannel()).channels.chat.destination_masked).toBe('chat •••0001')
    expect(await dispatch()).toContain('0 updates read')
    const polls = tg.requests.filter((r) => r.apiMethod === 'getUpdates')
    expect(Number(polls[polls.length - 1]!.params.offset)).toBeGreaterThan(Number(polls[0]!.params.offset ?? 0))
  })

  test('an expired code or a stranger message links nothing', async () => {
    const l = await link()
    await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: 16 * 60 } })
    tg.userSends({ id: 88800001 }, l.code)
    tg.userSends({ id: 88800002 }, 'hello bot')
    expect(await dispatch()).toContain('0 chats linked')
    expect((await chatChannel()).channels.chat.destination_masked).toBe('chat •••0001')
  })

  test('pause and resume through settings keep the chat', async () => {
    const paused = await call(app, 'PUT', '/notifications/settings', owner, { json: { channels: { chat: { status: 'paused' } } } })
    expect(paused.status).toBe(200)
    expect((await chatChannel()).channels.chat).toMatchObject({ status: 'paused', destination_masked: 'chat •••0001' })
    await call(app, 'PUT', '/notifications/settings', owner, { json: { channels: { chat: { status: 'connected' } } } })
    expect((await chatChannel()).channels.chat.status).toBe('connected')
  })

  test('the bot token never appears in the fake’s request log nor in any log line', () => {
    expect(JSON.stringify(tg.requests)).not.toContain(TOKEN)
    expect(app.rawLogs.join('\n')).not.toContain(TOKEN)
  })
})

describe('without a bot', () => {
  test('a service with no TELEGRAM_BOT_TOKEN answers 503 temporarily_unavailable and its dispatch says so', async () => {
    const bare = await startTestApp()
    try {
      const member = await newTenant(bare, 'no-bot')
      const res = await call(bare, 'POST', '/notifications/chat/link', member)
      expect(res.status).toBe(503)
      expect(((await res.json()) as { code: string }).code).toBe('temporarily_unavailable')
      expect(res.headers.get('retry-after')).not.toBeNull()
    } finally {
      await bare.close()
    }
  })
})
