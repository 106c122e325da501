import { type TOptional, Type } from '@sinclair/typebox'
import { Literals, Nullable, PageOf, Timestamp } from '../../platform/schemas'

/** The nine notification categories (the spec's Events 2), in this order everywhere. */
export const CATEGORIES = ['rental', 'temp', 'error', 'offline', 'price', 'maint', 'balance', 'payment', 'weekly'] as const
export type Category = (typeof CATEGORIES)[number]
/**
 * The critical categories: the only ones email may carry, and the ones delivered through quiet
 * hours. What can cost hardware or money if it waits until morning (docs/notifications.md).
 */
export const CRITICAL: readonly Category[] = ['temp', 'error', 'offline', 'balance', 'payment']

const Status = Literals(['connected', 'paused', 'not_connected'] as const)
const HHMM = Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description: 'Local time HH:MM in the account timezone, 00:00 to 23:59' })

const Channel = (kind: 'chat' | 'email') =>
  Type.Object({
    kind: Type.Literal(kind),
    status: Status,
    destination_masked: Nullable(Type.String({ maxLength: 128 })),
    verified_at: Nullable(Timestamp()),
    disabled_reason: Nullable(Type.String({ maxLength: 256 })),
  })

const Rule = Type.Object({ chat: Type.Boolean(), email: Type.Boolean() })

export const Settings = Type.Object({
  channels: Type.Object({ chat: Channel('chat'), email: Channel('email') }),
  rules: Type.Object(Object.fromEntries(CATEGORIES.map((c) => [c, Rule])) as Record<Category, typeof Rule>),
  quiet_hours: Type.Object({ enabled: Type.Boolean(), from: HHMM, to: HHMM }),
  event_keys: Type.Array(Type.String({ maxLength: 32 }), { maxItems: 32 }),
  crit_event_keys: Type.Array(Type.String({ maxLength: 32 }), { maxItems: 32 }),
  version: Type.Integer({ minimum: 0 }),
})

const RulePatch = Type.Object({ chat: Type.Optional(Type.Boolean()), email: Type.Optional(Type.Boolean()) }, { additionalProperties: false })

export const SettingsPatch = Type.Object(
  {
    rules: Type.Optional(
      Type.Object(Object.fromEntries(CATEGORIES.map((c) => [c, Type.Optional(RulePatch)])) as Record<Category, TOptional<typeof RulePatch>>, {
        additionalProperties: false,
      }),
    ),
    quiet_hours: Type.Optional(Type.Object({ enabled: Type.Boolean(), from: HHMM, to: HHMM }, { additionalProperties: false })),
    channels: Type.Optional(
      Type.Object(
        {
          chat: Type.Optional(Type.Object({ status: Status }, { additionalProperties: false })),
          email: Type.Optional(
            Type.Object(
              {
                status: Type.Optional(Status),
                address: Type.Optional(
                  Type.String({ format: 'email', maxLength: 254, description: 'Becomes the destination only once its verification code is confirmed' }),
                ),
              },
              { additionalProperties: false, minProperties: 1 },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const EmailConnectBody = Type.Object(
  {
    address: Type.Optional(Type.String({ format: 'email', maxLength: 254, description: 'Another address than the account email: a code is sent to it first' })),
    code: Type.Optional(Type.String({ pattern: '^[0-9]{6}$', description: 'The code sent to `address`, to confirm it' })),
  },
  { additionalProperties: false },
)

export const EmailConnectAnswer = Type.Object({
  status: Literals(['connected', 'verification_sent'] as const),
  channel: Channel('email'),
})

export const ChatLinkAnswer = Type.Object({
  code: Type.String({ pattern: '^[A-Z0-9]{8}$', description: 'Send it to the bot within 15 minutes; it works once' }),
  expires_at: Timestamp(),
  bot_username: Nullable(Type.String({ maxLength: 64, description: "The bot's Telegram username; null when Telegram could not be asked just now" })),
  deep_link: Nullable(Type.String({ maxLength: 256, description: 'https://t.me/<bot>?start=<code>: opens the bot with the code ready to send' })),
  instructions: Type.String({ maxLength: 256 }),
})

const Delivery = Type.Object({
  id: Type.String({ format: 'uuid' }),
  channel: Literals(['chat', 'email'] as const),
  status: Literals(['queued', 'sent', 'failed', 'skipped'] as const, {
    description:
      'queued (waiting for its time or a retry), sent (chat: Telegram accepted it; email: handed to the mail outbox), failed, skipped (the channel was not connected)',
  }),
  attempts: Type.Integer({ minimum: 0 }),
  next_attempt_at: Nullable(Timestamp({ description: 'When a queued delivery goes next (after quiet hours, or a retry)' })),
  sent_at: Nullable(Timestamp()),
  last_error: Nullable(Type.String({ maxLength: 512 })),
})

export const HistoryPage = PageOf(
  Type.Object({
    id: Type.String({ format: 'uuid' }),
    category: Type.String({ maxLength: 32, description: 'One of the nine categories, or test' }),
    title: Type.String({ maxLength: 256 }),
    body: Type.String({ maxLength: 2048 }),
    critical: Type.Boolean({ description: 'Critical notifications ignore quiet hours' }),
    created_at: Timestamp(),
    deliveries: Type.Array(Delivery),
  }),
)

export const DeliveryDetail = Type.Intersect([
  Delivery,
  Type.Object({
    notification_id: Type.String({ format: 'uuid' }),
    attempt_log: Type.Array(
      Type.Object({
        at: Timestamp(),
        outcome: Literals(['sent', 'retry', 'failed'] as const),
        http_status: Nullable(Type.Integer()),
        error: Nullable(Type.String({ maxLength: 512 })),
      }),
    ),
  }),
])

export const TestBody = Type.Object(
  { channels: Type.Optional(Type.Array(Literals(['chat', 'email'] as const), { minItems: 1, maxItems: 2, uniqueItems: true })) },
  { additionalProperties: false },
)

export const TestAnswer = Type.Object({ notification_id: Type.String({ format: 'uuid' }), deliveries: Type.Array(Delivery) })
