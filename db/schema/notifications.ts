import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { tenants } from './accounts'

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
