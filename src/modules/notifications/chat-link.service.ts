import { randomInt, timingSafeEqual } from 'node:crypto'
import { type Tx, withTransaction } from '../../../db/client'
import type { Actor } from '../../platform/access'
import { type Deps, perDeps } from '../../platform/context'
import { defineErrors } from '../../platform/domain-error'
import { hmac } from '../../platform/secrets'
import { formatTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { insertLinkCode, saveChannel, setUpdateOffset, spendLinkCode, updateOffset } from './notifications.repository'
import { bumpVersion, channelOf, connectedTo } from './settings.service'
import { telegramCall, telegramConfigured } from './telegram.client'

/**
 * Linking a Telegram chat (docs/notifications.md "The chat channel"): the owner asks for a short
 * one-time code and sends it to the bot; gpuhq reads the bot's updates (getUpdates, on each
 * notifications.dispatch run) and connects the chat that sent a live code. The getUpdates offset
 * moves in the transaction that handled the updates, so none is handled twice or skipped.
 */

const E = defineErrors('notifications', {
  chatNotConfigured: { problem: 'temporarily_unavailable', message: 'the chat channel is not configured on this service (TELEGRAM_BOT_TOKEN)' },
  webhookOff: { problem: 'not_found', message: 'the chat webhook is not in use on this service (TELEGRAM_UPDATES=webhook)' },
  webhookSecret: { problem: 'unauthorized', message: 'the X-Telegram-Bot-Api-Secret-Token header is missing or wrong' },
})

const CODE_MINUTES = 15
/** No 0/O, 1/I/L: read off a screen and typed into a phone. */
const ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789'

const hashOf = (deps: Deps, code: string) => hmac(deps.keys.codes, `chat-link\n${code}`).toString('base64url')

type BotInfo = { username?: string }
let botUsername: { token: string; name: string | null } | null = null

async function botName(deps: Deps): Promise<string | null> {
  const token = deps.config.telegram.botToken!
  if (botUsername?.token === token) return botUsername.name
  const me = await telegramCall<BotInfo>(deps, 'getMe', {})
  const name = me.ok ? (me.result.username ?? null) : null
  if (me.ok) botUsername = { token, name }
  return name
}

export async function issueChatLink({ deps, actor, audit }: { deps: Deps; actor: Actor; audit: AuditContext }) {
  if (!telegramConfigured(deps)) throw E.chatNotConfigured(undefined, { retryAfterSeconds: 3600 })
  const code = Array.from({ length: 8 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('')
  const now = deps.clock.nowUs()
  const expiresAt = now + CODE_MINUTES * 60 * 1_000_000
  await withTransaction(deps.db, async (tx) => {
    await insertLinkCode(tx, { codeHash: hashOf(deps, code), tenantId: actor.tenantId, expiresAt, usedAt: null, createdAt: now })
    await recordAudit(tx, deps, audit, { operation: 'notifications.chat.link', targetKind: 'tenant', targetId: actor.tenantId })
  })
  const bot = await botName(deps)
  return {
    code,
    expires_at: formatTimestamp(expiresAt),
    bot_username: bot,
    deep_link: bot ? `https://t.me/${bot}?start=${code}` : null,
    instructions: `Send ${code} to ${bot ? `@${bot}` : 'the gpuhq bot'} in Telegram (or open the deep link) within ${CODE_MINUTES} minutes.`,
  }
}

type Update = { update_id: number; message?: { chat?: { id?: number }; text?: string } }

/** The code in a message: "/start CODE", "CODE", any case, spaces or dashes ignored. */
function codeIn(text: string | undefined): string | null {
  if (!text) return null
  const cleaned = text
    .replace(/^\/start\s*/i, '')
    .replace(/[\s-]+/g, '')
    .toUpperCase()
  return /^[A-Z0-9]{8}$/.test(cleaned) ? cleaned : null
}

/** Links the chats that sent a live code among `updates`, in one transaction; `after` runs in it too (the polling offset). */
async function linkChats(deps: Deps, updates: readonly Update[], after?: (tx: Tx) => Promise<void>): Promise<{ chatId: number }[]> {
  const linked: { chatId: number }[] = []
  await withTransaction(deps.db, async (tx) => {
    linked.length = 0 // a PostgreSQL retry starts over (db/pg/pool.ts)
    const now = deps.clock.nowUs()
    for (const u of updates) {
      const chatId = u.message?.chat?.id
      const code = codeIn(u.message?.text)
      if (typeof chatId !== 'number' || code === null) continue
      const tenantId = await spendLinkCode(tx, hashOf(deps, code), now)
      if (!tenantId) continue
      await saveChannel(tx, connectedTo(await channelOf(tx, deps, tenantId, 'chat'), String(chatId), now))
      await bumpVersion(tx, deps, tenantId)
      linked.push({ chatId })
    }
    await after?.(tx)
  })
  return linked
}

/** A confirmation in each newly linked chat, best effort: the link stands whether or not it arrives. */
async function confirm(deps: Deps, linked: readonly { chatId: number }[]): Promise<void> {
  for (const l of linked) await telegramCall(deps, 'sendMessage', { chat_id: l.chatId, text: 'gpuhq: this chat now receives your fleet notifications.' })
}

/**
 * Learns chat links once: with TELEGRAM_UPDATES=polling reads the bot's new updates (no long poll:
 * the job runs every 30 s); with `webhook` makes sure Telegram has this process's webhook and
 * secret (updates then arrive at POST /notifications/telegram/webhook).
 */
export async function pollChatLinks(deps: Deps): Promise<string> {
  if (!telegramConfigured(deps)) return 'chat not configured'
  if (deps.config.telegram.updates === 'webhook') return await ensureWebhook(deps)
  const offset = await updateOffset(deps.db)
  const got = await telegramCall<Update[]>(deps, 'getUpdates', { offset, timeout: 0, limit: 100, allowed_updates: ['message'] })
  if (!got.ok) return `getUpdates failed: ${got.description}`
  const next = got.result.reduce((n, u) => Math.max(n, u.update_id + 1), offset)
  // The offset moves in the transaction that handled the updates: none is handled twice or skipped.
  const linked = await linkChats(deps, got.result, (tx) => setUpdateOffset(tx, next))
  await confirm(deps, linked)
  return `${got.result.length} updates read, ${linked.length} chats linked`
}

const WEBHOOK_PATH = '/api/v1/notifications/telegram/webhook'

/** The secret Telegram sends back in X-Telegram-Bot-Api-Secret-Token: derived from SECRET_KEY, never stored or logged. */
const webhookSecret = (deps: Deps) => hmac(deps.keys.codes, 'telegram-webhook').toString('base64url')

/** The webhook this process registered (per Deps), so setWebhook is called once, and again after a failure. */
const registered = perDeps(() => ({ url: null as string | null }))

async function ensureWebhook(deps: Deps): Promise<string> {
  const url = `${deps.config.publicUrl}${WEBHOOK_PATH}`
  const state = registered(deps)
  if (state.url === url) return 'webhook set'
  const r = await telegramCall(deps, 'setWebhook', { url, secret_token: webhookSecret(deps), allowed_updates: ['message'], max_connections: 10 })
  if (!r.ok) return `setWebhook failed: ${r.description}`
  state.url = url
  return 'webhook set now'
}

/**
 * POST /notifications/telegram/webhook: one update from Telegram. Checked by the secret token in
 * constant time before the body is looked at; an update Telegram repeats (it retries until it gets
 * a 2xx) spends no code twice, since a code is spent once.
 */
export async function receiveWebhook(deps: Deps, headers: Headers, body: unknown): Promise<{ ok: true }> {
  if (deps.config.telegram.updates !== 'webhook' || !telegramConfigured(deps)) throw E.webhookOff()
  const sent = Buffer.from(headers.get('x-telegram-bot-api-secret-token') ?? '')
  const want = Buffer.from(webhookSecret(deps))
  if (sent.length !== want.length || !timingSafeEqual(sent, want)) throw E.webhookSecret()
  const update = body && typeof body === 'object' && !Array.isArray(body) ? (body as Update) : null
  if (!update) return { ok: true }
  const linked = await linkChats(deps, [update])
  // Telegram waits for this answer: the confirmation goes after it.
  if (linked.length) void confirm(deps, linked).catch(() => undefined)
  return { ok: true }
}
