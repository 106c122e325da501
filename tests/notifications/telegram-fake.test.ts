import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { startTelegram, type FakeTelegram, type TelegramChat, type TelegramUpdate } from '../support/telegram'

/**
 * The Telegram Bot API fake (tests/support/telegram.ts) driven with plain fetch over HTTP, the way
 * the notifications channel's client will drive it: every behaviour the channel's tests rely on is
 * checked here once, so a failure there points at the channel and not at the fake. Time bounds are
 * upper bounds only, and generous: the machines that run this are loaded.
 */

const TOKEN = '7312000111:AAF-fake_token_for_the_self_test-0123'
const ALICE: TelegramChat = { id: 51_000_001, first_name: 'Alice', username: 'alice_gpu' }
const BOB: TelegramChat = { id: 51_000_002, first_name: 'Bob' }

type Answer = { status: number; body: any; headers: Headers }

/** Form and query string values as Telegram's clients send them: strings as they are, anything else as JSON. */
const asForm = (params: Record<string, unknown>) =>
  new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]))

/** One Bot API call over HTTP: GET with a query string, or POST with a JSON or urlencoded body. */
async function call(tg: FakeTelegram, method: string, params?: Record<string, unknown>, how: 'json' | 'form' | 'get' = 'json', token = TOKEN): Promise<Answer> {
  const base = `${tg.url}/bot${token}/${method}`
  let res: Response
  if (how === 'get' || !params) {
    const qs = params ? asForm(params).toString() : ''
    res = await fetch(qs ? `${base}?${qs}` : base)
  } else if (how === 'form') {
    res = await fetch(base, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: asForm(params).toString() })
  } else res = await fetch(base, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(params) })
  return { status: res.status, body: await res.json(), headers: res.headers }
}

async function until(what: string, check: () => boolean, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`)
    await Bun.sleep(5)
  }
}

describe('the fake Telegram Bot API', () => {
  let tg: FakeTelegram

  beforeEach(async () => {
    tg = await startTelegram({ token: TOKEN, bot: { first_name: 'GPU HQ', username: 'gpuhq_alerts_bot' }, webhookRetryDelayMs: 10 })
  })
  afterEach(async () => {
    await tg.close()
  })

  test('listens on loopback only', () => {
    expect(new URL(tg.url).hostname).toBe('127.0.0.1')
  })

  test('getMe answers the bot as a User with the getMe-only fields, by GET and by POST, whatever the case of the method name', async () => {
    const expected = {
      ok: true,
      result: {
        id: 7312000111,
        is_bot: true,
        first_name: 'GPU HQ',
        username: 'gpuhq_alerts_bot',
        can_join_groups: true,
        can_read_all_group_messages: false,
        supports_inline_queries: false,
      },
    }
    const viaGet = await call(tg, 'getMe')
    expect(viaGet.status).toBe(200)
    expect(viaGet.headers.get('content-type')).toContain('application/json')
    expect(viaGet.body).toEqual(expected)
    expect((await call(tg, 'getMe', {}, 'json')).body).toEqual(expected)
    expect((await call(tg, 'GETME')).body).toEqual(expected)
  })

  test('a wrong token is 401 Unauthorized and an unknown method 404 Not Found, in the error envelope', async () => {
    const wrong = await call(tg, 'getMe', undefined, 'get', '7312000111:AAF-not-the-right-one')
    expect(wrong.status).toBe(401)
    expect(wrong.body).toEqual({ ok: false, error_code: 401, description: 'Unauthorized' })
    const unknown = await call(tg, 'sendTelepathy', { chat_id: 1 })
    expect(unknown.status).toBe(404)
    expect(unknown.body).toEqual({ ok: false, error_code: 404, description: 'Not Found' })
    // A wrong token is refused before the method is even looked at.
    expect((await call(tg, 'sendTelepathy', undefined, 'get', 'nope')).status).toBe(401)
  })

  test('the request log never holds the token, neither in paths nor in parameters, and can be cleared', async () => {
    await call(tg, 'getMe')
    await call(tg, 'getMe', undefined, 'get', 'some-other-token')
    await call(tg, 'setWebhook', { url: `http://127.0.0.1:9/hook/${TOKEN}` })
    await call(tg, 'deleteWebhook')
    expect(tg.requests.map((r) => [r.method, r.apiMethod, r.path, r.status])).toEqual([
      ['GET', 'getMe', '/bot<token>/getMe', 200],
      ['GET', 'getMe', '/bot<token>/getMe', 401],
      ['POST', 'setWebhook', '/bot<token>/setWebhook', 200],
      ['GET', 'deleteWebhook', '/bot<token>/deleteWebhook', 200],
    ])
    expect(tg.requests[2]!.params.url).toBe('http://127.0.0.1:9/hook/<token>')
    const log = JSON.stringify(tg.requests)
    expect(log).not.toContain(TOKEN)
    expect(log).not.toContain('some-other-token')
    expect(log).not.toContain(encodeURIComponent(TOKEN))
    for (const r of tg.requests) expect(r.at).toBeGreaterThan(0)
    tg.clearRequests()
    expect(tg.requests).toEqual([])
  })

  test('getUpdates answers queued updates in the Update shape, honours limit, and confirms by offset', async () => {
    const first = tg.userSends(ALICE, '/start')!
    tg.userSends(BOB, 'hello')
    tg.userSends(ALICE, 'status?')
    const all = await call(tg, 'getUpdates')
    expect(all.status).toBe(200)
    expect(all.body.ok).toBe(true)
    const updates = all.body.result as TelegramUpdate[]
    expect(updates.map((u) => u.message.text)).toEqual(['/start', 'hello', 'status?'])
    expect(updates.map((u) => u.update_id)).toEqual([first.update_id, first.update_id + 1, first.update_id + 2])
    expect(updates[0]).toEqual({
      update_id: first.update_id,
      message: {
        message_id: 1,
        from: { id: ALICE.id, is_bot: false, first_name: 'Alice', username: 'alice_gpu' },
        chat: { id: ALICE.id, first_name: 'Alice', username: 'alice_gpu', type: 'private' },
        date: expect.any(Number),
        text: '/start',
      },
    })
    expect(Math.abs(updates[0]!.message.date - Date.now() / 1000)).toBeLessThan(120)
    // Bob has no username: the field is absent, not null.
    expect(updates[1]!.message.from).toEqual({ id: BOB.id, is_bot: false, first_name: 'Bob' })
    expect(updates[2]!.message.message_id).toBe(2)

    // Unconfirmed updates come again; limit cuts the answer.
    expect((await call(tg, 'getUpdates', { limit: 2 }, 'form')).body.result.map((u: TelegramUpdate) => u.message.text)).toEqual(['/start', 'hello'])
    // An offset above an update's id confirms it: it is gone for good.
    const after = await call(tg, 'getUpdates', { offset: first.update_id + 2 }, 'get')
    expect(after.body.result.map((u: TelegramUpdate) => u.message.text)).toEqual(['status?'])
    expect((await call(tg, 'getUpdates')).body.result.map((u: TelegramUpdate) => u.message.text)).toEqual(['status?'])
    expect(tg.pending().map((u) => u.message.text)).toEqual(['status?'])
    expect((await call(tg, 'getUpdates', { offset: first.update_id + 3 })).body).toEqual({ ok: true, result: [] })
    expect(tg.pending()).toEqual([])
    expect((await call(tg, 'getWebhookInfo')).body.result.pending_update_count).toBe(0)
  })

  test('a negative offset keeps only the last updates; limit and timeout are clamped, not refused', async () => {
    for (const text of ['a', 'b', 'c', 'd']) tg.userSends(ALICE, text)
    expect((await call(tg, 'getUpdates', { offset: -2 })).body.result.map((u: TelegramUpdate) => u.message.text)).toEqual(['c', 'd'])
    expect(tg.pending().map((u) => u.message.text)).toEqual(['c', 'd'])
    expect((await call(tg, 'getUpdates', { limit: 0 })).body.result).toHaveLength(1)
    expect((await call(tg, 'getUpdates', { limit: 500 })).body.result).toHaveLength(2)
  })

  // No clock in these two: a poll held for its whole 50 s timeout outlasts the test's own timeout
  // (30 s), so a fake that does not answer early, or ignores secondMs, fails by timing out.
  test('a long poll is held and returns before its timeout once a user writes', async () => {
    const poll = call(tg, 'getUpdates', { timeout: 50, offset: 0 })
    await until('the poll is held', () => tg.longPolling())
    tg.userSends(ALICE, 'ping')
    const answer = await poll
    expect(answer.status).toBe(200)
    expect(answer.body.result.map((u: TelegramUpdate) => u.message.text)).toEqual(['ping'])
    expect(tg.longPolling()).toBe(false)
  })

  test('a long poll with nothing to say answers an empty list when its timeout passes (seconds made short by secondMs)', async () => {
    await tg.close()
    tg = await startTelegram({ token: TOKEN, secondMs: 20 })
    const answer = await call(tg, 'getUpdates', { timeout: 50 }) // 1 s at 20 ms a second
    expect(answer.body).toEqual({ ok: true, result: [] })
    expect(tg.longPolling()).toBe(false)
  })

  test('a second getUpdates ends the held one with 409 Conflict, and takes its place', async () => {
    const first = call(tg, 'getUpdates', { timeout: 30 })
    await until('the first poll is held', () => tg.longPolling())
    const second = call(tg, 'getUpdates', { timeout: 30 })
    const ended = await first
    expect(ended.status).toBe(409)
    expect(ended.body).toEqual({
      ok: false,
      error_code: 409,
      description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
    })
    await until('the second poll is held', () => tg.longPolling())
    tg.userSends(BOB, 'still there?')
    const answered = await second
    expect(answered.status).toBe(200)
    expect(answered.body.result[0].message.text).toBe('still there?')
    expect(tg.requests.filter((r) => r.apiMethod === 'getUpdates').map((r) => r.status)).toEqual([409, 200])
  })

  test('allowed_updates without "message" keeps new messages out of the queue until reset', async () => {
    await call(tg, 'getUpdates', { allowed_updates: ['callback_query'] })
    expect(tg.userSends(ALICE, 'ignored')).toBeNull()
    expect((await call(tg, 'getWebhookInfo')).body.result.allowed_updates).toEqual(['callback_query'])
    await call(tg, 'getUpdates', { allowed_updates: [] })
    expect(tg.userSends(ALICE, 'seen')).not.toBeNull()
    expect((await call(tg, 'getUpdates')).body.result.map((u: TelegramUpdate) => u.message.text)).toEqual(['seen'])
  })

  describe('webhooks', () => {
    type Received = { secret: string | null; contentType: string | null; body: TelegramUpdate }
    let receiver: ReturnType<typeof Bun.serve>
    let received: Received[]
    let receiverStatus: number

    beforeAll(() => {
      receiver = Bun.serve({
        port: 0,
        hostname: '127.0.0.1',
        async fetch(request) {
          const body = (await request.json()) as TelegramUpdate
          if (receiverStatus !== 200) return new Response('down', { status: receiverStatus })
          received.push({ secret: request.headers.get('x-telegram-bot-api-secret-token'), contentType: request.headers.get('content-type'), body })
          return new Response('ok')
        },
      })
    })
    afterAll(async () => {
      await receiver.stop(true)
    })
    beforeEach(() => {
      received = []
      receiverStatus = 200
    })
    const hookUrl = () => `http://127.0.0.1:${receiver.port}/telegram/hook`

    test('setWebhook makes getUpdates a 409 and POSTs each new update as JSON with the secret header', async () => {
      const set = await call(tg, 'setWebhook', { url: hookUrl(), secret_token: 'hook-Secret_42' })
      expect(set.body).toEqual({ ok: true, result: true, description: 'Webhook was set' })
      const refused = await call(tg, 'getUpdates')
      expect(refused.status).toBe(409)
      expect(refused.body).toEqual({
        ok: false,
        error_code: 409,
        description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
      })
      const update = tg.userSends(ALICE, 'via webhook')!
      await until('the webhook received the update', () => received.length === 1)
      expect(received[0]).toEqual({ secret: 'hook-Secret_42', contentType: 'application/json', body: update })
      // It leaves the queue when the receiver's 200 is back, a moment after the receiver saw it.
      await until('the answered update left the queue', () => tg.pending().length === 0)
      const info = (await call(tg, 'getWebhookInfo')).body
      expect(info).toEqual({
        ok: true,
        result: { url: hookUrl(), has_custom_certificate: false, pending_update_count: 0, max_connections: 40, ip_address: '127.0.0.1' },
      })
      expect((await call(tg, 'setWebhook', { url: hookUrl(), secret_token: 'hook-Secret_42' })).body.description).toBe('Webhook is already set')
    })

    test('without a secret_token no secret header is sent', async () => {
      await call(tg, 'setWebhook', { url: hookUrl() }, 'form')
      tg.userSends(BOB, 'no secret')
      await until('the webhook received the update', () => received.length === 1)
      expect(received[0]!.secret).toBeNull()
    })

    test('updates queued before setWebhook are delivered on setting it, or dropped with drop_pending_updates', async () => {
      tg.userSends(ALICE, 'queued earlier')
      await call(tg, 'setWebhook', { url: hookUrl() })
      await until('the queued update arrived', () => received.length === 1)
      expect(received[0]!.body.message.text).toBe('queued earlier')

      await call(tg, 'deleteWebhook')
      tg.userSends(ALICE, 'to be dropped')
      await call(tg, 'setWebhook', { url: hookUrl(), drop_pending_updates: true })
      await tg.deliverPending()
      expect(received).toHaveLength(1)
      expect(tg.pending()).toEqual([])
    })

    test('failed posts are retried a few times, then counted as pending with the last error, and delivered once the receiver is back', async () => {
      await call(tg, 'setWebhook', { url: hookUrl(), secret_token: 's3cret' })
      receiverStatus = 500
      const update = tg.userSends(ALICE, 'while down')!
      await tg.deliverPending()
      const failed = tg.webhookDeliveries.filter((d) => d.update_id === update.update_id)
      expect(failed.length).toBe(3)
      for (const d of failed) expect(d).toMatchObject({ status: 500, error: 'Wrong response from the webhook: 500 Internal Server Error', secretHeader: true })
      const info = (await call(tg, 'getWebhookInfo')).body.result
      expect(info.pending_update_count).toBe(1)
      expect(info.last_error_message).toBe('Wrong response from the webhook: 500 Internal Server Error')
      expect(Math.abs(info.last_error_date - Date.now() / 1000)).toBeLessThan(120)
      expect(received).toEqual([])

      receiverStatus = 200
      tg.userSends(ALICE, 'back up')
      await tg.deliverPending()
      expect(received.map((r) => r.body.message.text)).toEqual(['while down', 'back up'])
      expect((await call(tg, 'getWebhookInfo')).body.result.pending_update_count).toBe(0)
    })

    test('a webhook nobody listens on fails with "Connection refused"', async () => {
      const gone = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') })
      const port = gone.port
      await gone.stop(true)
      await call(tg, 'setWebhook', { url: `http://127.0.0.1:${port}/hook` })
      tg.userSends(BOB, 'into the void')
      await tg.deliverPending()
      const info = (await call(tg, 'getWebhookInfo')).body.result
      expect(info.pending_update_count).toBe(1)
      expect(info.last_error_message).toBe('Connection refused')
    })

    test('deleteWebhook switches back to getUpdates, with the pending updates kept', async () => {
      await call(tg, 'setWebhook', { url: hookUrl() })
      receiverStatus = 503
      tg.userSends(ALICE, 'kept')
      await tg.deliverPending()
      expect((await call(tg, 'deleteWebhook')).body).toEqual({ ok: true, result: true, description: 'Webhook was deleted' })
      expect((await call(tg, 'deleteWebhook')).body).toEqual({ ok: true, result: true, description: 'Webhook is already deleted' })
      expect((await call(tg, 'getWebhookInfo')).body.result).toEqual({ url: '', has_custom_certificate: false, pending_update_count: 1 })
      expect((await call(tg, 'getUpdates')).body.result.map((u: TelegramUpdate) => u.message.text)).toEqual(['kept'])
    })

    test('setWebhook ends a held long poll with 409 and refuses bad URLs and secrets', async () => {
      const poll = call(tg, 'getUpdates', { timeout: 30 })
      await until('the poll is held', () => tg.longPolling())
      await call(tg, 'setWebhook', { url: hookUrl() })
      const ended = await poll
      expect(ended.status).toBe(409)
      expect(ended.body).toEqual({ ok: false, error_code: 409, description: 'Conflict: terminated by setWebhook request' })

      const notUrl = await call(tg, 'setWebhook', { url: 'not a url' })
      expect(notUrl.body).toEqual({ ok: false, error_code: 400, description: 'Bad Request: invalid webhook URL specified' })
      expect((await call(tg, 'setWebhook', { url: 'https://example.com/hook' })).status).toBe(400)
      const badSecret = await call(tg, 'setWebhook', { url: hookUrl(), secret_token: 'no spaces!' })
      expect(badSecret.body).toEqual({ ok: false, error_code: 400, description: 'Bad Request: secret token contains unallowed characters' })
    })
  })

  describe('sendMessage', () => {
    test('answers the sent Message, with message ids increasing per chat after the user’s own', async () => {
      tg.userSends(ALICE, '/start')
      tg.userSends(BOB, '/start')
      const one = await call(tg, 'sendMessage', { chat_id: ALICE.id, text: 'GPU rig-a is offline', parse_mode: 'HTML', disable_notification: true })
      expect(one.status).toBe(200)
      expect(one.body).toEqual({
        ok: true,
        result: {
          message_id: 2,
          from: { id: 7312000111, is_bot: true, first_name: 'GPU HQ', username: 'gpuhq_alerts_bot' },
          chat: { id: ALICE.id, first_name: 'Alice', username: 'alice_gpu', type: 'private' },
          date: expect.any(Number),
          text: 'GPU rig-a is offline',
        },
      })
      const two = await call(tg, 'sendMessage', { chat_id: String(ALICE.id), text: 'back online', disable_web_page_preview: 'true' }, 'form')
      expect(two.body.result.message_id).toBe(3)
      expect(two.body.result.link_preview_options).toEqual({ is_disabled: true })
      const toBob = await call(tg, 'sendMessage', { chat_id: BOB.id, text: 'hi Bob', link_preview_options: { is_disabled: true } }, 'get')
      expect(toBob.body.result.message_id).toBe(2)
      expect(toBob.body.result.chat).toEqual({ id: BOB.id, first_name: 'Bob', type: 'private' })

      expect(tg.sent.map(({ at, ...s }) => s)).toEqual([
        {
          chat_id: ALICE.id,
          message_id: 2,
          text: 'GPU rig-a is offline',
          parse_mode: 'HTML',
          disable_notification: true,
          link_preview_options: undefined,
        },
        {
          chat_id: ALICE.id,
          message_id: 3,
          text: 'back online',
          parse_mode: undefined,
          disable_notification: false,
          link_preview_options: { is_disabled: true },
        },
        { chat_id: BOB.id, message_id: 2, text: 'hi Bob', parse_mode: undefined, disable_notification: false, link_preview_options: { is_disabled: true } },
      ])
      for (const s of tg.sent) expect(s.at).toBeGreaterThan(0)
    })

    test('chats given at start are known without a message', async () => {
      await tg.close()
      tg = await startTelegram({ token: TOKEN, chats: [{ id: 42, first_name: 'Carol' }] })
      const r = await call(tg, 'sendMessage', { chat_id: 42, text: 'hello' })
      expect(r.body.result).toMatchObject({ message_id: 1, chat: { id: 42, first_name: 'Carol', type: 'private' } })
    })

    test('refuses empty and too long texts, unknown chats and a missing chat_id, in Telegram’s words', async () => {
      tg.userSends(ALICE, '/start')
      const expectError = async (params: Record<string, unknown>, code: number, description: string) => {
        const r = await call(tg, 'sendMessage', params)
        expect(r.status).toBe(code)
        expect(r.body).toEqual({ ok: false, error_code: code, description })
      }
      await expectError({ chat_id: ALICE.id, text: '' }, 400, 'Bad Request: message text is empty')
      await expectError({ chat_id: ALICE.id }, 400, 'Bad Request: message text is empty')
      await expectError({ chat_id: ALICE.id, text: 'x'.repeat(4097) }, 400, 'Bad Request: message is too long')
      await expectError({ chat_id: 999, text: 'who?' }, 400, 'Bad Request: chat not found')
      await expectError({ chat_id: '@alice_gpu', text: 'who?' }, 400, 'Bad Request: chat not found')
      await expectError({ text: 'to nobody' }, 400, 'Bad Request: chat_id is empty')
      await expectError({ chat_id: ALICE.id, text: 'x', parse_mode: 'BBCode' }, 400, 'Bad Request: unsupported parse_mode')
      // 4096 characters is the limit itself; characters, not UTF-16 units, are counted.
      expect((await call(tg, 'sendMessage', { chat_id: ALICE.id, text: 'x'.repeat(4096) })).status).toBe(200)
      expect((await call(tg, 'sendMessage', { chat_id: ALICE.id, text: '🖥'.repeat(4096) })).status).toBe(200)
      expect(tg.sent).toHaveLength(2)
    })

    test('a chat that blocked the bot is 403 "Forbidden: bot was blocked by the user" until unblocked', async () => {
      tg.userSends(ALICE, '/start')
      tg.block(ALICE.id)
      const refused = await call(tg, 'sendMessage', { chat_id: ALICE.id, text: 'anyone?' })
      expect(refused.status).toBe(403)
      expect(refused.body).toEqual({ ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' })
      tg.unblock(ALICE.id)
      expect((await call(tg, 'sendMessage', { chat_id: ALICE.id, text: 'welcome back' })).status).toBe(200)
      expect(tg.sent.map((s) => s.text)).toEqual(['welcome back'])
    })

    test('rateLimit answers the next calls 429 with retry_after in parameters and the Retry-After header', async () => {
      tg.userSends(ALICE, '/start')
      tg.rateLimit({ retryAfter: 7, times: 2 })
      for (let i = 0; i < 2; i++) {
        const r = await call(tg, 'sendMessage', { chat_id: ALICE.id, text: `burst ${i}` })
        expect(r.status).toBe(429)
        expect(r.body).toEqual({ ok: false, error_code: 429, description: 'Too Many Requests: retry after 7', parameters: { retry_after: 7 } })
        expect(r.headers.get('retry-after')).toBe('7')
      }
      expect((await call(tg, 'sendMessage', { chat_id: ALICE.id, text: 'after the wait' })).status).toBe(200)
      expect(tg.sent.map((s) => s.text)).toEqual(['after the wait'])
    })
  })

  test("setMode('5xx') answers 502 Bad Gateway, 'unreachable' refuses connections, 'ok' serves again on the same URL", async () => {
    await tg.setMode('5xx')
    const down = await call(tg, 'getMe')
    expect(down.status).toBe(502)
    expect(down.body).toEqual({ ok: false, error_code: 502, description: 'Bad Gateway' })

    await tg.setMode('unreachable')
    let refused: unknown = null
    await fetch(`${tg.url}/bot${TOKEN}/getMe`).catch((e) => {
      refused = e
    })
    expect(refused).not.toBeNull()

    await tg.setMode('ok')
    expect((await call(tg, 'getMe')).status).toBe(200)
    expect(tg.requests.map((r) => r.status)).toEqual([502, 200])
  })

  test("'unreachable' cuts a held long poll", async () => {
    const poll = fetch(`${tg.url}/bot${TOKEN}/getUpdates?timeout=30`).then(
      (r) => r.status,
      () => 'cut',
    )
    await until('the poll is held', () => tg.longPolling())
    await tg.setMode('unreachable')
    expect(await poll).not.toBe(200)
    expect(tg.longPolling()).toBe(false)
  })
})
