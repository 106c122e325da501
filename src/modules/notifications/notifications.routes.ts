import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { ifNoneMatchHits, notModified } from '../../platform/etag'
import { requestState } from '../../platform/http'
import { idempotent } from '../../platform/idempotency'
import { PageQuery, responses } from '../../platform/schemas'
import {
  ChatLinkAnswer,
  DeliveryDetail,
  EmailConnectAnswer,
  EmailConnectBody,
  HistoryPage,
  Settings,
  SettingsPatch,
  TestAnswer,
  TestBody,
} from './notifications.model'
import { getDelivery, listHistory, sendTest } from './outbox.service'
import { issueChatLink, receiveWebhook } from './chat-link.service'
import { connectEmail, getSettings, putSettings } from './settings.service'

const tags = ['notifications']
const READ = { role: 'viewer', scope: 'notifications:read', reach: 'tenant' } as const
const WRITE = { role: 'admin', scope: 'notifications:write', reach: 'tenant' } as const

/** Notification settings and channels (docs/notifications.md). */
export function notificationsRoutes(deps: Deps) {
  return apiRoutes('notifications', deps)
    .get(
      '/notifications/settings',
      async ({ verb, request, set }) => {
        const out = await getSettings(verb)
        // The 304 is a Response beside the 200 body: Elysia types an async handler's answer as one or the other.
        if (ifNoneMatchHits(request.headers.get('if-none-match'), out.etag)) return notModified(out.etag, requestState(request).id) as never
        set.headers.etag = out.etag
        return out.body
      },
      {
        response: responses({ 200: Settings }, [401, 403]),
        detail: describe(READ, {
          tags,
          summary: 'Read channels, rules, quiet hours',
          description:
            'Both channels are always present. `event_keys` are the nine categories; `crit_event_keys` the critical ones (temp, error, offline, balance, payment): the only ones email may carry, and delivered through quiet hours. ETag is `version`.',
        }),
      },
    )
    .put(
      '/notifications/settings',
      async ({ verb, request, body, set }) => {
        const out = await putSettings({ ...verb, ifMatch: request.headers.get('if-match'), input: body })
        set.headers.etag = out.etag
        return out.body
      },
      {
        beforeHandle: idempotent(deps),
        body: SettingsPatch,
        response: responses({ 200: Settings }, [401, 403, 409, 412, 413, 415, 422]),
        detail: describe(WRITE, {
          tags,
          summary: 'Change notification settings (partial: only the fields sent change)',
          description:
            '`rules` {category: {chat?, email?}}: email only for the critical categories, else 422 not_critical. `quiet_hours` {enabled, from, to} as HH:MM in the account timezone (a window may cross midnight). `channels.chat.status` / `channels.email.status`: connected resumes a paused channel, paused pauses it, not_connected forgets its destination; a channel never connected cannot be set connected or paused here (409: use its own flow). `channels.email.address` sends a verification code to that address; it becomes the destination only once confirmed through POST /notifications/email/connect. If-Match optional (412 when stale); takes Idempotency-Key.',
        }),
      },
    )
    .post(
      '/notifications/chat/link',
      async ({ verb, set }) => {
        set.status = 201
        return await issueChatLink(verb)
      },
      {
        beforeHandle: idempotent(deps),
        response: responses({ 201: ChatLinkAnswer }, [401, 403, 503]),
        detail: describe(WRITE, {
          tags,
          summary: 'Issue a one-time code linking a Telegram chat to the tenant',
          description:
            "An 8-character code, valid 15 minutes, used once. Send it to the bot (or open `deep_link`); the notifications.dispatch job reads the bot's updates every 30 s and connects the chat that sent it (the chat gets a confirmation). A chat linked again replaces the previous one. 503 temporarily_unavailable when the service has no TELEGRAM_BOT_TOKEN. Takes Idempotency-Key.",
        }),
      },
    )
    .post('/notifications/email/connect', ({ verb, body }) => connectEmail({ ...verb, input: body ?? {} }), {
      beforeHandle: idempotent(deps),
      body: EmailConnectBody,
      response: responses({ 200: EmailConnectAnswer }, [401, 403, 409, 413, 415, 422]),
      detail: describe(WRITE, {
        tags,
        summary: 'Send critical alerts by email',
        description:
          '`{}`: the account email of the member asking is connected at once (it was verified at sign-up). `{address}`: another address gets a 6-digit code (valid 15 minutes) and the answer says verification_sent. `{address, code}`: confirms it and connects it; a wrong, expired or over-tried code (5 tries) → 422 invalid_code. Destinations are shown masked. Takes Idempotency-Key.',
      }),
    })
    .get('/notifications/history', ({ verb, query }) => listHistory({ ...verb, input: query }), {
      query: t.Object({ ...PageQuery }),
      response: responses({ 200: HistoryPage }, [401, 403, 422]),
      detail: describe(READ, {
        tags,
        summary: 'Logical notifications with their channel deliveries, newest first',
        description: 'Paginated (`cursor`, `limit`). Each notification has one delivery per channel its rule turned on.',
      }),
    })
    .get('/notifications/deliveries/:delivery_id', ({ verb, params }) => getDelivery({ ...verb, id: params.delivery_id }), {
      params: t.Object({ delivery_id: t.String({ format: 'uuid' }) }),
      response: responses({ 200: DeliveryDetail }, [401, 403, 404, 422]),
      detail: describe(READ, { tags, summary: 'One delivery: status, every attempt, errors', description: "Another tenant's delivery is 404." }),
    })
    .post('/notifications/test', ({ verb, body }) => sendTest({ ...verb, channels: body?.channels }), {
      beforeHandle: idempotent(deps),
      body: t.Optional(TestBody),
      response: responses({ 200: TestAnswer }, [401, 403, 409, 413, 415, 422]),
      detail: describe(WRITE, {
        tags,
        summary: 'Send a test notification through the connected channels',
        description:
          '`channels` (chat, email; default: every connected one) picks which. Sent at once, ignoring quiet hours; the answer shows each delivery as it stands after the attempt. No connected channel among those asked → 409. Takes Idempotency-Key.',
      }),
    })
    .post('/notifications/telegram/webhook', ({ request, body }) => receiveWebhook(deps, request.headers, body), {
      body: Type.Unknown({ description: "One Telegram Update object, as Telegram's webhook POSTs it" }),
      response: responses({ 200: Type.Object({ ok: Type.Literal(true) }) }, [401, 404, 413, 415, 422]),
      detail: describe(
        { public: true },
        {
          tags,
          summary: "Telegram's webhook (TELEGRAM_UPDATES=webhook)",
          description:
            "Public; Telegram posts the bot's updates here once notifications.dispatch has registered the webhook (setWebhook with this URL under PUBLIC_URL and a secret token derived from SECRET_KEY). A request without the right X-Telegram-Bot-Api-Secret-Token → 401 and nothing is read. A message carrying a live link code connects its chat, as polling would. 404 while the service polls getUpdates (the default).",
        },
      ),
    })
}
