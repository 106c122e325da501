import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { tenants } from './tenants'

/**
 * A tenant's notification settings (the spec's "Notification settings"; docs/notifications.md):
 * rules per category and channel, quiet hours in the account timezone, and a version for ETag.
 */
export const notificationSettings = sqliteTable('notification_settings', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => tenants.id),
  rules: text('rules', { mode: 'json' }).$type<Record<string, { chat: boolean; email: boolean }>>().notNull(),
  quietEnabled: integer('quiet_enabled', { mode: 'boolean' }).notNull(),
  quietFrom: text('quiet_from').notNull(),
  quietTo: text('quiet_to').notNull(),
  version: integer('version').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/**
 * One channel of a tenant (`chat` or `email`): where it delivers, and an email address waiting for
 * its verification code (the code itself is kept only as a keyed hash).
 */
export const notificationChannels = sqliteTable(
  'notification_channels',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    kind: text('kind', { enum: ['chat', 'email'] }).notNull(),
    status: text('status', { enum: ['connected', 'paused', 'not_connected'] }).notNull(),
    destination: text('destination'),
    verifiedAt: integer('verified_at'),
    disabledReason: text('disabled_reason'),
    pendingAddress: text('pending_address'),
    pendingCodeHash: text('pending_code_hash'),
    pendingExpiresAt: integer('pending_expires_at'),
    pendingAttempts: integer('pending_attempts').notNull().default(0),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.kind] })],
)

/** One-time codes that link a Telegram chat to a tenant (kept as keyed hashes; a code is spent once used). */
export const chatLinkCodes = sqliteTable('chat_link_codes', {
  codeHash: text('code_hash').primaryKey(),
  tenantId: text('tenant_id')
    .notNull()
    .references(() => tenants.id),
  expiresAt: integer('expires_at').notNull(),
  usedAt: integer('used_at'),
  createdAt: integer('created_at').notNull(),
})

/** The bot's getUpdates offset: updates below it were handled (moved in the transaction that handled them). */
export const telegramState = sqliteTable('telegram_state', {
  id: text('id').primaryKey(),
  updateOffset: integer('update_offset').notNull(),
})

/** One logical notification of a tenant (docs/notifications.md "History"). */
export const notifications = sqliteTable(
  'notifications',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    /** One of the nine categories, or `test` for POST /notifications/test. */
    category: text('category').notNull(),
    title: text('title').notNull(),
    body: text('body').notNull(),
    critical: integer('critical', { mode: 'boolean' }).notNull(),
    /** Repeats of one condition share it: a second one within the grouping window is not sent again. */
    groupKey: text('group_key'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('notifications_tenant').on(t.tenantId, t.id), index('notifications_group').on(t.tenantId, t.groupKey, t.createdAt)],
)

/** One channel's delivery of a notification; claimed before a send, so two processes never send it twice. */
export const notificationDeliveries = sqliteTable(
  'notification_deliveries',
  {
    id: text('id').primaryKey(),
    notificationId: text('notification_id')
      .notNull()
      .references(() => notifications.id),
    tenantId: text('tenant_id').notNull(),
    channel: text('channel', { enum: ['chat', 'email'] }).notNull(),
    destination: text('destination'),
    status: text('status', { enum: ['queued', 'sent', 'failed', 'skipped'] }).notNull(),
    attempts: integer('attempts').notNull(),
    nextAttemptAt: integer('next_attempt_at').notNull(),
    claimedUntil: integer('claimed_until'),
    lastError: text('last_error'),
    sentAt: integer('sent_at'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('notification_deliveries_due').on(t.status, t.nextAttemptAt), index('notification_deliveries_notification').on(t.notificationId)],
)

/** Every attempt at a delivery: when, how it went, and the channel's answer. */
export const notificationAttempts = sqliteTable(
  'notification_attempts',
  {
    id: text('id').primaryKey(),
    deliveryId: text('delivery_id')
      .notNull()
      .references(() => notificationDeliveries.id),
    at: integer('at').notNull(),
    outcome: text('outcome', { enum: ['sent', 'retry', 'failed'] }).notNull(),
    httpStatus: integer('http_status'),
    error: text('error'),
  },
  (t) => [index('notification_attempts_delivery').on(t.deliveryId, t.at)],
)

/**
 * Per GPU, the temperature condition (docs/notifications.md "temp"): since when it has been at or
 * over the threshold, and whether that stretch was notified; re-armed only below the lower mark.
 */
export const temperatureWatch = sqliteTable(
  'temperature_watch',
  {
    serverId: text('server_id').notNull(),
    gpuIndex: integer('gpu_index').notNull(),
    overSince: integer('over_since'),
    alerted: integer('alerted', { mode: 'boolean' }).notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.serverId, t.gpuIndex] })],
)
