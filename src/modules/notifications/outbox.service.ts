import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { TenantWalk } from '../../platform/jobs'
import { paginate } from '../../platform/cursor'
import { defineErrors } from '../../platform/domain-error'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { composeMail, enqueueMail } from '../mail'
import { memberTimezone } from '../users'
import { type Category, CRITICAL } from './notifications.model'
import { findChannel, findSettings, saveChannel, type ChannelKind } from './notifications.repository'
import {
  attemptsOf,
  claimDue,
  type DeliveryRow,
  deliveriesOf,
  findDelivery,
  findNotification,
  insertAttempt,
  insertDeliveries,
  insertDelivery,
  insertNotification,
  insertNotifications,
  latestInGroups,
  type NotificationRow,
  notificationsOf,
  recentInGroup,
  updateDelivery,
} from './outbox.repository'
import { releaseAt } from './quiet-hours'
import { bumpVersion } from './settings.service'
import { telegramCall } from './telegram.client'

/**
 * The notification outbox (docs/notifications.md "Delivery"): one logical notification, one
 * delivery per channel its rule turns on. A non-critical delivery made during quiet hours waits for
 * the window's end; a critical one goes at once. The dispatcher claims one delivery at a time before
 * sending it and records every attempt, so two processes never send one delivery and a dispatcher
 * stopped between deliveries resumes without losing or repeating any.
 */

const E = defineErrors('notifications', {
  deliveryNotFound: { problem: 'not_found', message: 'no such delivery' },
  nothingToTest: { problem: 'conflict', message: 'no connected channel to send a test through: connect the chat or the email channel first' },
})

/** Repeats of one condition within this window are grouped into the first. */
const GROUP_WINDOW_US = 30 * 60 * 1_000_000
const CLAIM_US = 120 * 1_000_000
const MAX_ATTEMPTS = 10
const CHANNELS: readonly ChannelKind[] = ['chat', 'email']

/** Seconds before attempt n+1: 30 s doubling, at most an hour. */
const backoffSeconds = (attempts: number) => Math.min(3600, 30 * 2 ** Math.max(0, attempts - 1))

export type Notice = { category: Category; title: string; body: string; groupKey?: string; groupWindowUs?: number }

type AnyNotice = Notice | (Omit<Notice, 'category'> & { category: 'test'; channels: ChannelKind[] })
type Settings = Awaited<ReturnType<typeof findSettings>>
type Channel = Awaited<ReturnType<typeof findChannel>>

/** Whether the notice goes through the channel, by the tenant's rule for its category (a test: the channels asked for). */
function wants(settings: Settings, notice: AnyNotice, kind: ChannelKind): boolean {
  if (notice.category === 'test') return (notice as { channels: ChannelKind[] }).channels.includes(kind)
  const category = notice.category as Category
  const r = settings?.rules[category] ?? { chat: true, email: CRITICAL.includes(category) }
  return kind === 'chat' ? r.chat : r.email && CRITICAL.includes(category)
}

const isCritical = (notice: AnyNotice) => notice.category === 'test' || CRITICAL.includes(notice.category as Category)

/** When a notification made now is due: at once when critical, else at the end of the tenant's quiet hours. */
function dueAt(now: number, critical: boolean, settings: Settings, timeZone: string): number {
  const quiet = settings ? { enabled: settings.quietEnabled, from: settings.quietFrom, to: settings.quietTo } : { enabled: false, from: '22:00', to: '07:00' }
  return critical ? now : releaseAt(now, quiet, timeZone)
}

function notificationRow(id: string, tenantId: string, notice: AnyNotice, now: number): NotificationRow {
  return {
    id,
    tenantId,
    category: notice.category,
    title: notice.title.slice(0, 256),
    body: notice.body.slice(0, 2048),
    critical: isCritical(notice),
    groupKey: notice.groupKey ?? null,
    createdAt: now,
  }
}

function deliveryRow(id: string, notificationId: string, tenantId: string, kind: ChannelKind, channel: Channel, due: number, now: number): DeliveryRow {
  const live = channel?.status === 'connected' && channel.destination !== null
  return {
    id,
    notificationId,
    tenantId,
    channel: kind,
    destination: live ? channel!.destination : null,
    status: live ? 'queued' : 'skipped',
    attempts: 0,
    nextAttemptAt: due,
    claimedUntil: null,
    lastError: live ? null : `the ${kind} channel is ${channel?.status ?? 'not_connected'}`,
    sentAt: null,
    createdAt: now,
    updatedAt: now,
  }
}

/**
 * Records a notification for the tenant in the caller's transaction and queues its deliveries.
 * Answers its id, or null when it repeats a grouped one (nothing new is sent).
 */
export async function notify(tx: DbOrTx, deps: Deps, tenantId: string, notice: AnyNotice): Promise<string | null> {
  const now = deps.clock.nowUs()
  // A window of 0 only tags the notification with its group (alerts link it to an incident); nothing is grouped.
  const window = (notice as Notice).groupWindowUs ?? GROUP_WINDOW_US
  if (notice.groupKey && window > 0 && (await recentInGroup(tx, tenantId, notice.groupKey, now - window))) return null
  const settings = await findSettings(tx, tenantId)
  const id = deps.newId()
  await insertNotification(tx, notificationRow(id, tenantId, notice, now))
  // The account timezone: the owner's (billing tiles use the same).
  const timeZone = (await memberTimezone(tx, tenantId, null)) ?? 'UTC'
  const due = dueAt(now, isCritical(notice), settings, timeZone)
  for (const kind of CHANNELS) {
    if (!wants(settings, notice, kind)) continue
    await insertDelivery(tx, deliveryRow(deps.newId(), id, tenantId, kind, await findChannel(tx, tenantId, kind), due, now))
  }
  return id
}

/**
 * Several notifications of one tenant, made together (a presence flush's transitions): for each,
 * in order, exactly what notify makes of it, with the tenant's settings, timezone and channels read
 * once, the groups' latest notifications in one read, and the rows written in multi-row statements.
 * A notice whose group already has one in its window, or an earlier notice of the same group in
 * this call, is grouped (null). Answers each notice's id or null.
 */
export async function notifyMany(tx: DbOrTx, deps: Deps, tenantId: string, notices: readonly Notice[]): Promise<(string | null)[]> {
  if (notices.length === 0) return []
  const now = deps.clock.nowUs()
  const windowOf = (n: Notice) => n.groupWindowUs ?? GROUP_WINDOW_US
  const grouped = notices.filter((n) => n.groupKey && windowOf(n) > 0)
  const since = grouped.reduce((m, n) => Math.min(m, now - windowOf(n)), now)
  const latest = grouped.length ? await latestInGroups(tx, tenantId, [...new Set(grouped.map((n) => n.groupKey!))], since) : new Map<string, number>()
  let settings: Settings
  let settingsRead = false
  let timeZone: string | null = null
  const channels = new Map<ChannelKind, Channel>()
  const made: NotificationRow[] = []
  const deliveries: DeliveryRow[] = []
  const ids: (string | null)[] = []
  for (const notice of notices) {
    const at = notice.groupKey ? latest.get(notice.groupKey) : undefined
    if (notice.groupKey && windowOf(notice) > 0 && at !== undefined && at >= now - windowOf(notice)) {
      ids.push(null)
      continue
    }
    if (!settingsRead) {
      settings = await findSettings(tx, tenantId)
      settingsRead = true
    }
    const id = deps.newId()
    made.push(notificationRow(id, tenantId, notice, now))
    ids.push(id)
    if (notice.groupKey) latest.set(notice.groupKey, now)
    timeZone ??= (await memberTimezone(tx, tenantId, null)) ?? 'UTC'
    const due = dueAt(now, isCritical(notice), settings, timeZone)
    for (const kind of CHANNELS) {
      if (!wants(settings, notice, kind)) continue
      if (!channels.has(kind)) channels.set(kind, await findChannel(tx, tenantId, kind))
      deliveries.push(deliveryRow(deps.newId(), id, tenantId, kind, channels.get(kind), due, now))
    }
  }
  await insertNotifications(tx, made)
  await insertDeliveries(tx, deliveries)
  return ids
}

type SendResult =
  | { outcome: 'sent' }
  | { outcome: 'retry'; error: string; status: number | null; afterSeconds: number }
  | { outcome: 'failed'; error: string; status: number | null }

async function send(deps: Deps, d: DeliveryRow, title: string, body: string): Promise<SendResult> {
  // Mail has its own outbox (sealed, retried): handing the message to it, in the transaction that
  // records this delivery as sent, is the send, so a crash can neither lose nor double it.
  if (d.channel === 'email') return { outcome: 'sent' }
  const r = await telegramCall(deps, 'sendMessage', { chat_id: Number(d.destination), text: `${title}\n${body}`.slice(0, 4096) })
  if (r.ok) return { outcome: 'sent' }
  if (r.status === 429) return { outcome: 'retry', error: r.description, status: 429, afterSeconds: r.retryAfterSeconds ?? backoffSeconds(d.attempts + 1) }
  if (r.unreachable) return { outcome: 'retry', error: r.description, status: r.status, afterSeconds: backoffSeconds(d.attempts + 1) }
  return { outcome: 'failed', error: r.description, status: r.status }
}

/** Sends every due delivery once; answers how many were sent. */
export async function dispatchNotifications(deps: Deps, tenants: TenantWalk): Promise<number> {
  let sent = 0
  for (;;) {
    const now = deps.clock.nowUs()
    const d = await withTransaction(deps.db, (tx) => claimDue(tx, now, now + CLAIM_US))
    if (!d) return sent
    // Each delivery in its tenant's boundary: one that cannot be sent or recorded stays claimed (so it
    // waits out the claim) and the tenant is left out for a while; the other tenants' deliveries go on.
    await tenants.run(d.tenantId, async () => {
      const n = (await findNotification(deps.db, d.notificationId))!
      const result = await send(deps, d, n.title, n.body)
      const at = deps.clock.nowUs()
      const attempts = d.attempts + 1
      await withTransaction(deps.db, async (tx) => {
        const giveUp = result.outcome === 'failed' || (result.outcome === 'retry' && attempts >= MAX_ATTEMPTS)
        await insertAttempt(tx, {
          id: deps.newId(),
          deliveryId: d.id,
          at,
          outcome: result.outcome === 'sent' ? 'sent' : giveUp ? 'failed' : 'retry',
          httpStatus: result.outcome === 'sent' ? 200 : result.status,
          error: result.outcome === 'sent' ? null : result.error,
        })
        if (result.outcome === 'sent' && d.channel === 'email')
          await enqueueMail(tx, deps, composeMail(d.destination!, 'notification', `gpuhq: ${n.title}`, [n.body, deps.config.publicUrl]))
        if (result.outcome === 'sent')
          await updateDelivery(tx, d.id, { status: 'sent', attempts, sentAt: at, claimedUntil: null, lastError: null, updatedAt: at })
        else if (giveUp) await updateDelivery(tx, d.id, { status: 'failed', attempts, claimedUntil: null, lastError: result.error, updatedAt: at })
        else
          await updateDelivery(tx, d.id, {
            attempts,
            claimedUntil: null,
            lastError: result.error,
            nextAttemptAt: at + (result as { afterSeconds: number }).afterSeconds * 1_000_000,
            updatedAt: at,
          })
        // A chat that blocked the bot is paused, with the reason, until the owner resumes it.
        if (result.outcome === 'failed' && d.channel === 'chat' && /blocked|deactivated|kicked/i.test(result.error)) {
          const channel = await findChannel(tx, d.tenantId, 'chat')
          if (channel && channel.destination === d.destination) {
            await saveChannel(tx, { ...channel, status: 'paused', disabledReason: `Telegram: ${result.error}`.slice(0, 256), updatedAt: at })
            await bumpVersion(tx, deps, d.tenantId)
          }
        }
      })
      if (result.outcome === 'sent') sent++
      if (result.outcome === 'sent' && d.channel === 'email') deps.mail.kick()
    })
  }
}

function deliveryView(d: DeliveryRow) {
  return {
    id: d.id,
    channel: d.channel,
    status: d.status,
    attempts: d.attempts,
    next_attempt_at: d.status === 'queued' ? formatTimestamp(d.nextAttemptAt) : null,
    sent_at: formatNullableTimestamp(d.sentAt),
    last_error: d.lastError,
  }
}

/** GET /notifications/history: newest first, each with its deliveries. */
export async function listHistory({ deps, actor, input }: { deps: Deps; actor: Actor; input: { cursor?: string; limit?: number } }) {
  return await paginate(deps.keys.cursor, {
    scope: `notifications:${actor.tenantId}`,
    input,
    fetch: async (after: { id: string } | undefined, take) => {
      const rows = await notificationsOf(deps.db, actor.tenantId, after?.id, take)
      const byNotification = new Map<string, DeliveryRow[]>()
      for (const d of await deliveriesOf(
        deps.db,
        rows.map((r) => r.id),
      ))
        byNotification.set(d.notificationId, [...(byNotification.get(d.notificationId) ?? []), d])
      return rows.map((r) => ({ ...r, deliveries: byNotification.get(r.id) ?? [] }))
    },
    position: (n) => ({ id: n.id }),
    view: (n) => ({
      id: n.id,
      category: n.category,
      title: n.title,
      body: n.body,
      critical: n.critical,
      created_at: formatTimestamp(n.createdAt),
      deliveries: n.deliveries.map(deliveryView),
    }),
  })
}

/** GET /notifications/deliveries/{id}: status, every attempt and its error. */
export async function getDelivery({ deps, actor, id }: { deps: Deps; actor: Actor; id: string }) {
  const d = await findDelivery(deps.db, actor.tenantId, id.toLowerCase())
  if (!d) throw E.deliveryNotFound()
  const attempts = await attemptsOf(deps.db, d.id)
  return {
    ...deliveryView(d),
    notification_id: d.notificationId,
    attempt_log: attempts.map((a) => ({ at: formatTimestamp(a.at), outcome: a.outcome, http_status: a.httpStatus, error: a.error })),
  }
}

/** POST /notifications/test: a test through the chosen connected channels (all connected ones by default), sent now. */
export async function sendTest({ deps, actor, channels }: { deps: Deps; actor: Actor; channels: ChannelKind[] | undefined }) {
  const id = await withTransaction(deps.db, async (tx) => {
    const wanted: ChannelKind[] = []
    for (const k of channels ?? [...CHANNELS]) if ((await findChannel(tx, actor.tenantId, k))?.status === 'connected') wanted.push(k)
    if (wanted.length === 0) throw E.nothingToTest()
    return (await notify(tx, deps, actor.tenantId, {
      category: 'test',
      title: 'Test notification',
      body: 'This is a test from gpuhq: this channel works.',
      channels: wanted,
    }))!
  })
  // Sent now, outside the job: a failing delivery is logged and left for the job, as there.
  await dispatchNotifications(deps, new TenantWalk(deps, 'notifications.dispatch'))
  const deliveries = await deliveriesOf(deps.db, [id])
  return { notification_id: id, deliveries: deliveries.map(deliveryView) }
}
