import { STATUS_CODES } from 'node:http'

/**
 * A local fake of the Telegram Bot API (https://api.telegram.org) for the notifications channel,
 * so the channel's client is tested against Telegram's own wire format over real HTTP.
 *
 * Followed, in this order:
 * - The Bot API reference, https://core.telegram.org/bots/api (read in the copy kept by
 *   github.com/spontanurlaub/telegram-bot-api-log, file `api`, Bot API 6.9): "Making requests"
 *   (`/bot<token>/METHOD_NAME`, GET and POST, parameters by query string, urlencoded form, JSON or
 *   multipart; `{ok: true, result, description?}` or `{ok: false, error_code, description,
 *   parameters?}`; method names are case-insensitive), getUpdates (offset confirms, a negative
 *   offset keeps the last -offset updates, limit 1-100 default 100, timeout in seconds, allowed_updates
 *   kept until changed), setWebhook (secret_token sent as `X-Telegram-Bot-Api-Secret-Token`,
 *   drop_pending_updates, "give up after a reasonable amount of attempts"), deleteWebhook,
 *   getWebhookInfo and WebhookInfo, getMe and User (can_join_groups, can_read_all_group_messages,
 *   supports_inline_queries "returned only in getMe"), Chat, Message, ResponseParameters (retry_after)
 *   and sendMessage (text "1-4096 characters after entities parsing"; link_preview_options is the Bot
 *   API 7.0 successor of disable_web_page_preview).
 * - The Bot API server's source, github.com/tdlib/telegram-bot-api (telegram-bot-api/Client.cpp,
 *   Query.cpp, HttpConnection.cpp, WebhookActor.cpp), for what the reference leaves out: the error
 *   descriptions word for word ("Conflict: terminated by other getUpdates request; make sure that
 *   only one bot instance is running", "Conflict: can't use getUpdates method while webhook is
 *   active; use deleteWebhook to delete the webhook first", "Conflict: terminated by setWebhook
 *   request", "Too Many Requests: retry after N" with a `Retry-After` header, "Forbidden: bot was
 *   blocked by the user", "Bad Request: chat not found", "Bad Request: chat_id is empty", "Bad
 *   Request: message text is empty", "Bad Request: unsupported parse_mode"), that limit and timeout are
 *   clamped rather than refused (1-100, 0-50 s), that a new long poll ends the one held before it (the
 *   held one gets the 409), the check order of sendMessage (text, then chat, then what the servers
 *   refuse), the "Webhook was set" and "Webhook was deleted" descriptions, booleans read as
 *   "true"/"yes"/"1", and webhook errors worded "Wrong response from the webhook: 500 Internal Server
 *   Error".
 * - What bots observe from the cloud server where it differs from that source: a wrong token is
 *   401 "Unauthorized", an unknown method 404 "Not Found", a too long text 400 "Bad Request: message
 *   is too long", and an outage 502 `{"ok":false,"error_code":502,"description":"Bad Gateway"}`
 *   (tdlib/telegram-bot-api issue #868).
 *
 * Not modelled: getUpdates answering the 409 up to 3 s late when conflicts repeat, the one setWebhook
 * per second limit, the my_chat_member update a block produces, entity parsing (parse_mode is
 * checked by name only and the answered text is the text sent), groups and channels (every chat is a
 * private chat with a user who started the bot), and real flood control (`rateLimit` scripts it).
 * The webhook may be plain HTTP on any port, as a local Bot API server allows, but only on loopback.
 */

type Mode = 'ok' | 'unreachable' | '5xx'

/** A user's private chat with the bot; its id is the user's id, as in Telegram. */
export type TelegramChat = { id: number; first_name?: string; username?: string }

type User = { id: number; is_bot: boolean; first_name: string; username?: string }
type PrivateChat = { id: number; type: 'private'; first_name: string; username?: string }
type Message = { message_id: number; from: User; chat: PrivateChat; date: number; text: string; link_preview_options?: Record<string, unknown> }

export type TelegramUpdate = { update_id: number; message: Message }

type BotInit = {
  id?: number
  first_name?: string
  username?: string
  can_join_groups?: boolean
  can_read_all_group_messages?: boolean
  supports_inline_queries?: boolean
}

export type TelegramOptions = {
  /** The one valid bot token (default: the reference's example token, whose bot id is 123456). */
  token?: string
  /** getMe's answer; `id` defaults to the number before the token's colon, as Telegram's tokens carry it. */
  bot?: BotInit
  /** Users who started the bot before the test: sendMessage knows their chats. */
  chats?: TelegramChat[]
  /** The first update_id ("a certain positive number", then sequential). */
  firstUpdateId?: number
  /** How long one second of getUpdates' `timeout` lasts here, so a test can make long polls short (default 1000 ms). */
  secondMs?: number
  /** Webhook POSTs per update before it waits for the next trigger, still pending (default 3). */
  webhookAttempts?: number
  /** Pause between two of those attempts (default 50 ms). */
  webhookRetryDelayMs?: number
  /** How long one webhook POST may take before it counts as failed (default 10 s). */
  webhookTimeoutMs?: number
}

type TelegramRequest = {
  /** The HTTP method. */
  method: string
  /** The Bot API method as the caller spelled it ('' when the path has none). */
  apiMethod: string
  /** Path and query string with the token replaced by `<token>`, whichever token was sent. */
  path: string
  /** The parameters as the server read them (query string and body, every value a string, as Telegram reads them), token scrubbed. */
  params: Record<string, string>
  /** 499 (nginx's "client closed request") for a held long poll whose caller went away, or that 'unreachable' or close() cut. */
  status: number
  /** When the request arrived (a held long poll is logged when it is answered). */
  at: number
}

type SentMessage = {
  chat_id: number
  message_id: number
  text: string
  parse_mode: string | undefined
  disable_notification: boolean
  link_preview_options: Record<string, unknown> | undefined
  at: number
}

type WebhookDelivery = {
  update_id: number
  /** The webhook URL, token scrubbed (Telegram suggests the token as a secret path). */
  url: string
  secretHeader: boolean
  /** The receiver's HTTP status, null when no answer came. */
  status: number | null
  /** As getWebhookInfo's last_error_message words it, null on success. */
  error: string | null
  at: number
}

export type FakeTelegram = {
  /** The origin to use instead of https://api.telegram.org: the API lives at `${url}/bot<token>/<method>`. */
  url: string
  token: string
  requests: TelegramRequest[]
  /** Every sendMessage that succeeded, in order. */
  sent: SentMessage[]
  /** Every webhook POST attempt, in order. */
  webhookDeliveries: WebhookDelivery[]
  /**
   * A user writes to the bot: the chat becomes known (the user started the bot) and a message update
   * is queued, answered to a held getUpdates at once or POSTed to the webhook. Null when the bot's
   * allowed_updates leave out "message" (the message exists, no update is made for it).
   */
  userSends: (chat: TelegramChat, text: string) => TelegramUpdate | null
  /** The user blocks the bot: sendMessage to the chat answers 403. Independent of userSends. */
  block: (chatId: number) => void
  unblock: (chatId: number) => void
  /** The next `times` sendMessage calls (default 1) answer 429 with this retry_after, whatever they carry. */
  rateLimit: (limit: { retryAfter: number; times?: number }) => void
  /**
   * From now, the first `n` sendMessage calls are handled as usual and every later one is held
   * unanswered and not delivered (Telegram has not accepted it), until releaseHeld(): a send in
   * flight when its caller dies.
   */
  holdSendsAfter: (n: number) => void
  /** How many sendMessage calls are held right now. */
  heldSends: () => number
  /** Answers every held sendMessage 502 Bad Gateway (nothing delivered) and stops holding. */
  releaseHeld: () => void
  /** 'unreachable' closes the listener (connections refused, held polls cut); 'ok' listens again on the same port. */
  setMode: (mode: Mode) => Promise<void>
  /** Updates not confirmed yet (getUpdates) or not delivered yet (webhook). */
  pending: () => TelegramUpdate[]
  /** Whether a getUpdates is being held right now (the client is long polling). */
  longPolling: () => boolean
  /**
   * Resolves once webhook delivery stops (all delivered, or every attempt at the oldest spent): waits
   * for a delivery already running, else starts one (a test's way to say "the receiver is back").
   */
  deliverPending: () => Promise<void>
  clearRequests: () => void
  close: () => Promise<void>
}

const DOC_TOKEN = '123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11'
const CONFLICT_POLL = 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running'
const CONFLICT_WEBHOOK = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
const CONFLICT_SET_WEBHOOK = 'Conflict: terminated by setWebhook request'
const MAX_TEXT = 4096
const PARSE_MODES = new Set(['none', 'markdown', 'markdownv2', 'html'])

type Held = { limit: number; resolve: (r: Response) => void; timer: ReturnType<typeof setTimeout> }
type Webhook = { url: string; secret: string; maxConnections: number }
type KnownChat = { id: number; first_name: string; username?: string }

const unixNow = () => Math.floor(Date.now() / 1000)
const clamp = (n: number, min: number, max: number) => Math.min(max, Math.max(min, n))
/** td::to_integer: leading digits, 0 when there are none; the default only when the parameter is absent or empty. */
const int = (v: string | undefined, dflt: number) => {
  if (v === undefined || v.trim() === '') return dflt
  const n = Number.parseInt(v.trim(), 10)
  return Number.isFinite(n) ? n : 0
}
/** Client::to_bool: "true", "yes" or "1", any case. */
const bool = (v: string | undefined) => v !== undefined && ['true', 'yes', '1'].includes(v.trim().toLowerCase())

function answer(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })
}
const ok = (result: unknown, description?: string) => answer(description ? { ok: true, result, description } : { ok: true, result })
const fail = (code: number, description: string) => answer({ ok: false, error_code: code, description }, code)
const tooMany = (retryAfter: number) =>
  answer({ ok: false, error_code: 429, description: `Too Many Requests: retry after ${retryAfter}`, parameters: { retry_after: retryAfter } }, 429, {
    'retry-after': String(retryAfter),
  })

/** Telegram reads JSON bodies into the same string parameters as forms: strings as they are, anything else as its JSON text. */
async function readParams(request: Request, url: URL): Promise<Record<string, string> | Response> {
  const params: Record<string, string> = {}
  for (const [k, v] of url.searchParams) params[k] = v
  if (request.method === 'GET' || request.method === 'HEAD') return params
  const type = (request.headers.get('content-type') ?? '').toLowerCase()
  if (type.startsWith('multipart/form-data')) {
    for (const [k, v] of await request.formData()) if (typeof v === 'string') params[k] = v
    return params
  }
  const text = await request.text()
  if (type.startsWith('application/json')) {
    if (!text.trim()) return params
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      // No documented wording for this one: the fake's own.
      return fail(400, 'Bad Request: the JSON body could not be parsed')
    }
    if (body && typeof body === 'object' && !Array.isArray(body))
      for (const [k, v] of Object.entries(body)) if (v !== null && v !== undefined) params[k] = typeof v === 'string' ? v : JSON.stringify(v)
    return params
  }
  for (const [k, v] of new URLSearchParams(text)) params[k] = v
  return params
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
}

/** A failed webhook POST in getWebhookInfo's words (the connection errors as the Bot API server reports them). */
function webhookError(e: unknown): string {
  const err = e as { name?: string; code?: string; message?: string }
  if (err?.name === 'TimeoutError') return 'Read timeout expired'
  if (err?.code === 'ConnectionRefused' || err?.code === 'ECONNREFUSED') return 'Connection refused'
  return err?.message || 'Webhook connection closed'
}

export async function startTelegram(options: TelegramOptions = {}): Promise<FakeTelegram> {
  const token = options.token ?? DOC_TOKEN
  const botId = options.bot?.id ?? (Number.parseInt(token.split(':')[0]!, 10) || 123456)
  const bot = {
    id: botId,
    is_bot: true,
    first_name: options.bot?.first_name ?? 'gpuhq test',
    username: options.bot?.username ?? 'gpuhq_test_bot',
  }
  const me = {
    ...bot,
    can_join_groups: options.bot?.can_join_groups ?? true,
    can_read_all_group_messages: options.bot?.can_read_all_group_messages ?? false,
    supports_inline_queries: options.bot?.supports_inline_queries ?? false,
  }
  const secondMs = options.secondMs ?? 1000
  const attempts = Math.max(1, options.webhookAttempts ?? 3)
  const retryDelayMs = options.webhookRetryDelayMs ?? 50
  const webhookTimeoutMs = options.webhookTimeoutMs ?? 10_000

  const requests: TelegramRequest[] = []
  const sent: SentMessage[] = []
  const webhookDeliveries: WebhookDelivery[] = []
  const chats = new Map<number, KnownChat>()
  const lastMessageId = new Map<number, number>()
  const blocked = new Set<number>()
  const queue: TelegramUpdate[] = []
  let nextUpdateId = options.firstUpdateId ?? 734_215_001
  /** null: the default set (every type but chat_member and the reactions), which includes "message". */
  let allowedUpdates: string[] | null = null
  let held: Held | null = null
  let webhook: Webhook | null = null
  let lastError: { date: number; message: string } | null = null
  let holdAfter: number | null = null
  const holding: (() => void)[] = []
  let limited = { times: 0, retryAfter: 0 }
  let mode: Mode = 'ok'
  let closed = false
  const closing = new AbortController()

  const scrub = (s: string) => s.replaceAll(token, '<token>').replaceAll(encodeURIComponent(token), '<token>')
  const remember = (c: TelegramChat): KnownChat => {
    const prev = chats.get(c.id)
    const chat: KnownChat = { id: c.id, first_name: c.first_name ?? prev?.first_name ?? 'User' }
    const username = c.username ?? prev?.username
    if (username !== undefined) chat.username = username
    chats.set(c.id, chat)
    return chat
  }
  for (const c of options.chats ?? []) remember(c)
  const chatObject = (c: KnownChat): PrivateChat => ({
    id: c.id,
    first_name: c.first_name,
    ...(c.username !== undefined ? { username: c.username } : {}),
    type: 'private',
  })
  /** One sequence per chat, shared by the user's messages and the bot's, as message ids are "inside this chat". */
  const nextMessageId = (chatId: number) => {
    const id = (lastMessageId.get(chatId) ?? 0) + 1
    lastMessageId.set(chatId, id)
    return id
  }
  const setAllowed = (raw: string | undefined) => {
    if (raw === undefined || raw.trim() === '') return
    try {
      const v = JSON.parse(raw) as unknown
      if (Array.isArray(v)) allowedUpdates = v.length === 0 ? null : v.map(String)
    } catch {
      // An unreadable list leaves the setting as it was.
    }
  }

  // --- getUpdates -------------------------------------------------------------------------------

  const finishHeld = (h: Held, response: Response) => {
    clearTimeout(h.timer)
    if (held === h) held = null
    h.resolve(response)
  }
  /** Updates reach a held poll on the next tick, so a burst of userSends lands in one answer as it does behind Telegram's 1 ms batching. */
  const wakeHeld = () =>
    setTimeout(() => {
      if (held && queue.length > 0) finishHeld(held, ok(queue.slice(0, held.limit)))
    }, 0)

  function getUpdates(p: Record<string, string>, request: Request): Response | Promise<Response> {
    if (webhook) return fail(409, CONFLICT_WEBHOOK)
    const offset = int(p.offset, 0)
    const limit = clamp(int(p.limit, 100), 1, 100)
    const timeout = clamp(int(p.timeout, 0), 0, 50)
    setAllowed(p.allowed_updates)
    // Confirmation: an update is forgotten once getUpdates asks for an offset above its id.
    if (offset < 0) queue.splice(0, Math.max(0, queue.length + offset))
    else if (offset > 0) queue.splice(0, queue.filter((u) => u.update_id < offset).length)
    if (queue.length > 0 || timeout === 0) return ok(queue.slice(0, limit))
    if (held) finishHeld(held, fail(409, CONFLICT_POLL))
    return new Promise<Response>((resolve) => {
      const h: Held = { limit, resolve, timer: setTimeout(() => finishHeld(h, ok([])), timeout * secondMs) }
      held = h
      request.signal.addEventListener('abort', () => {
        if (held === h) finishHeld(h, new Response(null, { status: 499 }))
      })
    })
  }

  // --- webhooks ---------------------------------------------------------------------------------

  async function post(hook: Webhook, update: TelegramUpdate): Promise<boolean> {
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    if (hook.secret) headers['X-Telegram-Bot-Api-Secret-Token'] = hook.secret
    const at = Date.now()
    let status: number | null = null
    let error: string | null = null
    try {
      const res = await fetch(hook.url, {
        method: 'POST',
        headers,
        body: JSON.stringify(update),
        redirect: 'manual',
        signal: AbortSignal.any([AbortSignal.timeout(webhookTimeoutMs), closing.signal]),
      })
      status = res.status
      await res.arrayBuffer().catch(() => undefined)
      if (status < 200 || status > 299) error = `Wrong response from the webhook: ${status} ${res.statusText || STATUS_CODES[status] || ''}`.trimEnd()
    } catch (e) {
      error = webhookError(e)
    }
    webhookDeliveries.push({ update_id: update.update_id, url: scrub(hook.url), secretHeader: Boolean(hook.secret), status, error, at })
    if (error !== null) lastError = { date: unixNow(), message: error }
    return error === null
  }

  /** Delivers in update order, one at a time; an update that fails every attempt stays pending (and blocks those after it) until the next trigger. */
  async function deliverAll() {
    while (!closed && webhook && queue.length > 0) {
      const hook = webhook
      const update = queue[0]!
      let delivered = false
      for (let attempt = 1; attempt <= attempts && !delivered; attempt++) {
        if (closed || webhook !== hook || queue[0] !== update) break
        if (attempt > 1) await Bun.sleep(retryDelayMs)
        delivered = await post(hook, update)
      }
      if (closed || webhook !== hook || queue[0] !== update) continue
      if (!delivered) return
      queue.shift()
    }
  }
  let pumping: Promise<void> | null = null
  let rerun = false
  /** A new update or webhook that comes while delivery runs makes it run once more, so none waits for a later trigger. */
  function pump(): Promise<void> {
    if (pumping !== null) {
      rerun = true
      return pumping
    }
    pumping = (async () => {
      do {
        rerun = false
        await deliverAll()
      } while (rerun && !closed)
    })().finally(() => {
      pumping = null
    })
    return pumping
  }

  function setWebhook(p: Record<string, string>): Response {
    const target = p.url ?? ''
    if (target === '') return deleteWebhook(p)
    let parsed: URL
    try {
      parsed = new URL(target)
    } catch {
      return fail(400, 'Bad Request: invalid webhook URL specified')
    }
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return fail(400, 'Bad Request: invalid webhook URL specified')
    if (!isLoopback(parsed.hostname)) return fail(400, `Bad Request: bad webhook: the fake delivers to loopback addresses only, not ${parsed.hostname}`)
    const secret = p.secret_token ?? ''
    if (secret.length > 256) return fail(400, 'Bad Request: secret token is too long')
    if (!/^[A-Za-z0-9_-]*$/.test(secret)) return fail(400, 'Bad Request: secret token contains unallowed characters')
    const maxConnections = clamp(int(p.max_connections, 40), 1, 100)
    const drop = bool(p.drop_pending_updates)
    setAllowed(p.allowed_updates)
    if (webhook && webhook.url === target && webhook.secret === secret && webhook.maxConnections === maxConnections && !drop)
      return ok(true, 'Webhook is already set')
    if (drop) queue.length = 0
    if (held) finishHeld(held, fail(409, CONFLICT_SET_WEBHOOK))
    webhook = { url: target, secret, maxConnections }
    lastError = null
    void pump()
    return ok(true, 'Webhook was set')
  }

  function deleteWebhook(p: Record<string, string>): Response {
    if (bool(p.drop_pending_updates)) queue.length = 0
    if (!webhook) return ok(true, 'Webhook is already deleted')
    webhook = null
    lastError = null
    return ok(true, 'Webhook was deleted')
  }

  function webhookInfo() {
    return {
      url: webhook?.url ?? '',
      has_custom_certificate: false,
      pending_update_count: queue.length,
      ...(lastError ? { last_error_date: lastError.date, last_error_message: lastError.message } : {}),
      ...(webhook ? { max_connections: webhook.maxConnections, ip_address: '127.0.0.1' } : {}),
      ...(allowedUpdates ? { allowed_updates: [...allowedUpdates] } : {}),
    }
  }

  // --- sendMessage ------------------------------------------------------------------------------

  function sendMessage(p: Record<string, string>): Response {
    if (limited.times > 0) {
      limited.times--
      return tooMany(limited.retryAfter)
    }
    const text = p.text ?? ''
    if (text.trim() === '') return fail(400, 'Bad Request: message text is empty')
    const parseMode = p.parse_mode ?? ''
    if (parseMode !== '' && !PARSE_MODES.has(parseMode.toLowerCase())) return fail(400, 'Bad Request: unsupported parse_mode')
    let linkPreview: Record<string, unknown> | undefined
    if (p.link_preview_options) {
      let v: unknown
      try {
        v = JSON.parse(p.link_preview_options)
      } catch {
        return fail(400, "Bad Request: can't parse link preview options JSON object")
      }
      if (!v || typeof v !== 'object' || Array.isArray(v)) return fail(400, 'Bad Request: object expected as link preview options')
      linkPreview = v as Record<string, unknown>
    } else if (bool(p.disable_web_page_preview)) linkPreview = { is_disabled: true }
    const chatId = (p.chat_id ?? '').trim()
    if (chatId === '') return fail(400, 'Bad Request: chat_id is empty')
    const chat = /^-?\d+$/.test(chatId) ? chats.get(Number(chatId)) : undefined
    if (!chat) return fail(400, 'Bad Request: chat not found')
    if ([...text].length > MAX_TEXT) return fail(400, 'Bad Request: message is too long')
    if (blocked.has(chat.id)) return fail(403, 'Forbidden: bot was blocked by the user')
    const message: Message = {
      message_id: nextMessageId(chat.id),
      from: { ...bot },
      chat: chatObject(chat),
      date: unixNow(),
      text,
      ...(linkPreview ? { link_preview_options: linkPreview } : {}),
    }
    sent.push({
      chat_id: chat.id,
      message_id: message.message_id,
      text,
      parse_mode: parseMode || undefined,
      disable_notification: bool(p.disable_notification),
      link_preview_options: linkPreview,
      at: Date.now(),
    })
    return ok(message)
  }

  // --- HTTP -------------------------------------------------------------------------------------

  function route(apiMethod: string, p: Record<string, string>, request: Request): Response | Promise<Response> {
    switch (apiMethod.toLowerCase()) {
      case 'getme':
        return ok(me)
      case 'getupdates':
        return getUpdates(p, request)
      case 'setwebhook':
        return setWebhook(p)
      case 'deletewebhook':
        return deleteWebhook(p)
      case 'getwebhookinfo':
        return ok(webhookInfo())
      case 'sendmessage':
        if (holdAfter !== null) {
          if (holdAfter <= 0) return new Promise<Response>((resolve) => holding.push(() => resolve(fail(502, 'Bad Gateway'))))
          holdAfter--
        }
        return sendMessage(p)
      default:
        return fail(404, 'Not Found')
    }
  }

  async function handle(request: Request): Promise<Response> {
    const at = Date.now()
    const url = new URL(request.url)
    const m = /^\/bot([^/]*)\/(.*)$/.exec(url.pathname)
    const apiMethod = m ? m[2]! : ''
    const path = scrub(m ? `/bot<token>/${apiMethod}${url.search}` : url.pathname + url.search)
    let params: Record<string, string> = {}
    let response: Response
    if (mode === '5xx') response = fail(502, 'Bad Gateway')
    else if (!m || apiMethod === '') response = fail(404, 'Not Found')
    else {
      const read = await readParams(request, url)
      if (read instanceof Response) response = read
      else {
        params = read
        let sentToken = m[1]!
        try {
          sentToken = decodeURIComponent(sentToken)
        } catch {
          // A malformed escape is simply a wrong token.
        }
        response = sentToken !== token ? fail(401, 'Unauthorized') : await route(apiMethod, params, request)
      }
    }
    const logged = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, scrub(v)]))
    requests.push({ method: request.method, apiMethod, path, params: logged, status: response.status, at })
    return response
  }

  const listen = (port: number) => Bun.serve({ port, hostname: '127.0.0.1', idleTimeout: 0, fetch: handle })
  let server: ReturnType<typeof listen> | null = listen(0)
  const port = server.port!
  let switching = Promise.resolve()
  const cutHeld = () => {
    if (held) finishHeld(held, new Response(null, { status: 499 }))
  }

  return {
    url: `http://127.0.0.1:${port}`,
    token,
    requests,
    sent,
    webhookDeliveries,
    userSends(c, text) {
      const chat = remember(c)
      const message: Message = {
        message_id: nextMessageId(chat.id),
        from: { id: chat.id, is_bot: false, first_name: chat.first_name, ...(chat.username !== undefined ? { username: chat.username } : {}) },
        chat: chatObject(chat),
        date: unixNow(),
        text,
      }
      if (allowedUpdates && !allowedUpdates.includes('message')) return null
      const update: TelegramUpdate = { update_id: nextUpdateId++, message }
      queue.push(update)
      if (webhook) void pump()
      else wakeHeld()
      return structuredClone(update)
    },
    block(chatId) {
      if (!chats.has(chatId)) remember({ id: chatId })
      blocked.add(chatId)
    },
    unblock(chatId) {
      blocked.delete(chatId)
    },
    holdSendsAfter(n) {
      holdAfter = n
    },
    heldSends: () => holding.length,
    releaseHeld() {
      holdAfter = null
      for (const answer of holding.splice(0)) answer()
    },
    rateLimit({ retryAfter, times = 1 }) {
      limited = { times, retryAfter }
    },
    setMode(next) {
      mode = next
      switching = switching.then(async () => {
        if (mode === 'unreachable' && server) {
          const s = server
          server = null
          cutHeld()
          await s.stop(true)
        } else if (mode !== 'unreachable' && !server && !closed) server = listen(port)
      })
      return switching
    },
    pending: () => structuredClone(queue),
    longPolling: () => held !== null,
    deliverPending: () => pumping ?? pump(),
    clearRequests: () => void requests.splice(0),
    async close() {
      closed = true
      closing.abort()
      cutHeld()
      for (const answer of holding.splice(0)) answer()
      await switching
      if (server) await server.stop(true)
      server = null
      await pumping
    },
  }
}
