import type { Static } from '@sinclair/typebox'
import { randomInt } from 'node:crypto'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { defineErrors, invalidField } from '../../platform/domain-error'
import { assertIfMatch, etagOf } from '../../platform/etag'
import { hmac, safeEqual } from '../../platform/secrets'
import { formatNullableTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { composeMail, enqueueMail } from '../mail'
import { findUserById } from '../users'
import { CATEGORIES, type Category, CRITICAL, type EmailConnectBody, type SettingsPatch } from './notifications.model'
import { type ChannelKind, type ChannelRow, findChannel, findSettings, saveChannel, saveSettings, type SettingsRow } from './notifications.repository'

/**
 * Notification settings (docs/notifications.md "Settings"): rules per category and channel, quiet
 * hours, and the two channels, always both present. A channel is connected only through its own
 * flow (a chat through the bot link, an email address through its code); settings can pause,
 * resume or disconnect it. Email may carry only the critical categories.
 */

const E = defineErrors('notifications', {
  notLinked: {
    problem: 'conflict',
    message: 'this channel was never connected: connect it through its own flow first (the chat link code, or POST /notifications/email/connect)',
  },
})

const CODE_MINUTES = 15
const MAX_CODE_ATTEMPTS = 5

function defaultSettings(deps: Deps, tenantId: string): SettingsRow {
  return {
    tenantId,
    rules: Object.fromEntries(CATEGORIES.map((c) => [c, { chat: true, email: CRITICAL.includes(c) }])),
    quietEnabled: false,
    quietFrom: '22:00',
    quietTo: '07:00',
    version: 0,
    updatedAt: deps.clock.nowUs(),
  }
}

export async function channelOf(db: DbOrTx, deps: Deps, tenantId: string, kind: ChannelKind): Promise<ChannelRow> {
  return (
    (await findChannel(db, tenantId, kind)) ?? {
      tenantId,
      kind,
      status: 'not_connected',
      destination: null,
      verifiedAt: null,
      disabledReason: null,
      pendingAddress: null,
      pendingCodeHash: null,
      pendingExpiresAt: null,
      pendingAttempts: 0,
      updatedAt: deps.clock.nowUs(),
    }
  )
}

/** The channel connected to a verified destination: resumed, its reason and any pending code cleared. */
export function connectedTo(c: ChannelRow, destination: string, now: number): ChannelRow {
  return {
    ...c,
    status: 'connected',
    destination,
    verifiedAt: now,
    disabledReason: null,
    pendingAddress: null,
    pendingCodeHash: null,
    pendingExpiresAt: null,
    updatedAt: now,
  }
}

/** "a•••@example.com" for an address; "chat •••4321" for a chat id. */
function masked(c: ChannelRow): string | null {
  if (c.destination === null) return null
  if (c.kind === 'email') {
    const [local, domain] = c.destination.split('@')
    return `${local!.slice(0, 1)}•••@${domain}`
  }
  return `chat •••${c.destination.slice(-4)}`
}

function channelView(c: ChannelRow) {
  return {
    kind: c.kind,
    status: c.status,
    destination_masked: masked(c),
    verified_at: formatNullableTimestamp(c.verifiedAt),
    disabled_reason: c.disabledReason,
  }
}

function settingsView(s: SettingsRow, chat: ChannelRow, email: ChannelRow) {
  return {
    channels: { chat: channelView(chat), email: channelView(email) },
    rules: Object.fromEntries(CATEGORIES.map((c) => [c, { chat: s.rules[c]?.chat ?? false, email: s.rules[c]?.email ?? false }])) as Record<
      Category,
      { chat: boolean; email: boolean }
    >,
    quiet_hours: { enabled: s.quietEnabled, from: s.quietFrom, to: s.quietTo },
    event_keys: [...CATEGORIES],
    crit_event_keys: [...CRITICAL],
    version: s.version,
  }
}

export async function getSettings({ deps, actor }: { deps: Deps; actor: Actor }) {
  const s = (await findSettings(deps.db, actor.tenantId)) ?? defaultSettings(deps, actor.tenantId)
  const chat = await channelOf(deps.db, deps, actor.tenantId, 'chat')
  const email = await channelOf(deps.db, deps, actor.tenantId, 'email')
  return {
    etag: etagOf(s.version),
    body: settingsView(s, chat, email),
  }
}

/** A status change asked of a channel: resume or pause a linked one, or disconnect it. */
function changeStatus(c: ChannelRow, status: ChannelRow['status'], now: number): ChannelRow {
  if (status === 'not_connected') return { ...c, status, destination: null, verifiedAt: null, disabledReason: null, updatedAt: now }
  if (c.destination === null) throw E.notLinked()
  return { ...c, status, disabledReason: status === 'connected' ? null : c.disabledReason, updatedAt: now }
}

function codeHashOf(deps: Deps, tenantId: string, address: string, code: string): string {
  return hmac(deps.keys.codes, `notifications-email\n${tenantId}\n${address}\n${code}`).toString('base64url')
}

/** Sends a code to `address` and keeps it pending on the email channel (the channel is unchanged until it is confirmed). */
async function startVerification(tx: DbOrTx, deps: Deps, c: ChannelRow, address: string): Promise<ChannelRow> {
  const code = String(randomInt(0, 1_000_000)).padStart(6, '0')
  await enqueueMail(
    tx,
    deps,
    composeMail(
      address,
      'notification_email_code',
      `Your gpuhq notification code: ${code}`,
      [
        'Enter this code in gpuhq to receive critical alerts at this address:',
        code,
        `It is valid for ${CODE_MINUTES} minutes. If you did not ask for it, ignore this email.`,
        deps.config.publicUrl,
      ],
      CODE_MINUTES * 60,
    ),
  )
  const now = deps.clock.nowUs()
  return {
    ...c,
    pendingAddress: address,
    pendingCodeHash: codeHashOf(deps, c.tenantId, address, code),
    pendingExpiresAt: now + CODE_MINUTES * 60 * 1_000_000,
    pendingAttempts: 0,
    updatedAt: now,
  }
}

/** PUT /notifications/settings: a partial update; only the fields sent change. */
export async function putSettings({
  deps,
  actor,
  audit,
  ifMatch,
  input,
}: {
  deps: Deps
  actor: Actor
  audit: AuditContext
  ifMatch: string | null
  input: Static<typeof SettingsPatch>
}) {
  const out = await withTransaction(deps.db, async (tx) => {
    const before = (await findSettings(tx, actor.tenantId)) ?? defaultSettings(deps, actor.tenantId)
    assertIfMatch(ifMatch, etagOf(before.version))
    const now = deps.clock.nowUs()
    const next: SettingsRow = { ...before, rules: structuredClone(before.rules), version: before.version + 1, updatedAt: now }
    for (const [category, rule] of Object.entries(input.rules ?? {}) as [Category, { chat?: boolean; email?: boolean } | undefined][]) {
      if (!rule) continue
      if (rule.email === true && !CRITICAL.includes(category))
        throw invalidField('notifications', `/rules/${category}/email`, 'not_critical', `email carries only the critical categories: ${CRITICAL.join(', ')}`)
      const current = next.rules[category] ?? { chat: false, email: false }
      next.rules[category] = { chat: rule.chat ?? current.chat, email: rule.email ?? current.email }
    }
    if (input.quiet_hours) {
      next.quietEnabled = input.quiet_hours.enabled
      next.quietFrom = input.quiet_hours.from
      next.quietTo = input.quiet_hours.to
    }
    let chat = await channelOf(tx, deps, actor.tenantId, 'chat')
    let email = await channelOf(tx, deps, actor.tenantId, 'email')
    if (input.channels?.chat) chat = changeStatus(chat, input.channels.chat.status, now)
    if (input.channels?.email?.status) email = changeStatus(email, input.channels.email.status, now)
    const address = input.channels?.email?.address?.trim().toLowerCase()
    if (address !== undefined && address !== email.destination) email = await startVerification(tx, deps, email, address)
    await saveSettings(tx, next)
    await saveChannel(tx, chat)
    await saveChannel(tx, email)
    await recordAudit(tx, deps, audit, { operation: 'notifications.settings.update', targetKind: 'tenant', targetId: actor.tenantId })
    return { etag: etagOf(next.version), body: settingsView(next, chat, email) }
  })
  if (input.channels?.email?.address !== undefined) deps.mail.kick()
  return out
}

/** Bumps the settings version after a channel changed outside PUT (a link, a verification, a block). */
export async function bumpVersion(tx: DbOrTx, deps: Deps, tenantId: string): Promise<void> {
  const s = (await findSettings(tx, tenantId)) ?? defaultSettings(deps, tenantId)
  await saveSettings(tx, { ...s, version: s.version + 1, updatedAt: deps.clock.nowUs() })
}

/**
 * POST /notifications/email/connect: without an address, the account email of the member asking
 * (verified when they signed up) is connected at once; with another address, a code is sent to it;
 * with the address and its code, that address is connected.
 */
export async function connectEmail({ deps, actor, audit, input }: { deps: Deps; actor: Actor; audit: AuditContext; input: Static<typeof EmailConnectBody> }) {
  const accountEmail = actor.userId ? ((await findUserById(deps.db, actor.userId))?.email ?? null) : null
  const address = input.address?.trim().toLowerCase() ?? accountEmail
  if (address === null) throw invalidField('notifications', '/address', 'required', 'name the address to connect: this caller has no account email')
  const out = await withTransaction(deps.db, async (tx) => {
    const now = deps.clock.nowUs()
    let email = await channelOf(tx, deps, actor.tenantId, 'email')
    let status: 'connected' | 'verification_sent' = 'connected'
    if (address === accountEmail && input.code === undefined) {
      email = connectedTo(email, address, now)
    } else if (input.code === undefined) {
      email = await startVerification(tx, deps, email, address)
      status = 'verification_sent'
    } else {
      const expired = email.pendingExpiresAt === null || email.pendingExpiresAt <= now
      const spent = email.pendingAttempts >= MAX_CODE_ATTEMPTS
      const matches =
        email.pendingAddress === address &&
        email.pendingCodeHash !== null &&
        safeEqual(email.pendingCodeHash, codeHashOf(deps, actor.tenantId, address, input.code))
      if (expired || spent || !matches) {
        await saveChannel(tx, { ...email, pendingAttempts: email.pendingAttempts + 1, updatedAt: now })
        return { refused: true as const }
      }
      email = connectedTo(email, address, now)
    }
    await saveChannel(tx, email)
    await bumpVersion(tx, deps, actor.tenantId)
    await recordAudit(tx, deps, audit, {
      operation: `notifications.email.${status === 'connected' ? 'connect' : 'verify'}`,
      targetKind: 'tenant',
      targetId: actor.tenantId,
    })
    return { refused: false as const, status, channel: channelView(email) }
  })
  // The failed attempt is counted (committed) before the refusal is answered.
  if (out.refused)
    throw invalidField(
      'notifications',
      '/code',
      'invalid_code',
      'the code does not match this address, or it expired or was tried too often: ask for a new one',
    )
  if (out.status === 'verification_sent') deps.mail.kick()
  return { status: out.status, channel: out.channel }
}
