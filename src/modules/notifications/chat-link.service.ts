import { randomInt } from 'node:crypto'
import { withTransaction } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
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
  withTransaction(deps.db, (tx) => {
    insertLinkCode(tx, { codeHash: hashOf(deps, code), tenantId: actor.tenantId, expiresAt, usedAt: null, createdAt: now })
    recordAudit(tx, deps, audit, { operation: 'notifications.chat.link', targetKind: 'tenant', targetId: actor.tenantId })
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

/** Reads the bot's new updates once (no long poll: the job runs every 30 s) and links the chats that sent a live code. */
export async function pollChatLinks(deps: Deps): Promise<string> {
  if (!telegramConfigured(deps)) return 'chat not configured'
  const offset = updateOffset(deps.db)
  const got = await telegramCall<Update[]>(deps, 'getUpdates', { offset, timeout: 0, limit: 100, allowed_updates: ['message'] })
  if (!got.ok) return `getUpdates failed: ${got.description}`
  const linked: { chatId: number }[] = []
  withTransaction(deps.db, (tx) => {
    const now = deps.clock.nowUs()
    let next = offset
    for (const u of got.result) {
      next = Math.max(next, u.update_id + 1)
      const chatId = u.message?.chat?.id
      const code = codeIn(u.message?.text)
      if (chatId === undefined || code === null) continue
      const tenantId = spendLinkCode(tx, hashOf(deps, code), now)
      if (!tenantId) continue
      saveChannel(tx, connectedTo(channelOf(tx, deps, tenantId, 'chat'), String(chatId), now))
      bumpVersion(tx, deps, tenantId)
      linked.push({ chatId })
    }
    setUpdateOffset(tx, next)
  })
  // A confirmation in the chat, best effort: the link stands whether or not it arrives.
  for (const l of linked) await telegramCall(deps, 'sendMessage', { chat_id: l.chatId, text: 'gpuhq: this chat now receives your fleet notifications.' })
  return `${got.result.length} updates read, ${linked.length} chats linked`
}
