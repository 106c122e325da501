import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { servers } from './fleet'

/** The error object of a failed command, as stored (commands.delivery.ts normalises it). */
export type StoredCommandError = {
  code: string
  message: string
  retryable: boolean
  stage: string | null
  details: Record<string, string | number | boolean | null> | null
}

/** Typed commands for agents, with the delivery and execution axes kept apart. */
export const commands = sqliteTable(
  'commands',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    type: text('type').notNull(),
    schemaVersion: integer('schema_version').notNull(),
    params: text('params', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    requires: text('requires', { enum: ['none', 'idle', 'after_rental'] }).notNull(),
    deliveryStatus: text('delivery_status', { enum: ['queued', 'routing', 'sent', 'accepted', 'delivery_failed'] }).notNull(),
    executionStatus: text('execution_status', { enum: ['not_started', 'running', 'succeeded', 'failed', 'cancelled', 'expired'] }).notNull(),
    queueReason: text('queue_reason'),
    progress: integer('progress'),
    result: text('result', { mode: 'json' }).$type<Record<string, unknown>>(),
    error: text('error', { mode: 'json' }).$type<StoredCommandError>(),
    issuedByType: text('issued_by_type', { enum: ['user', 'pat', 'agent', 'system'] }).notNull(),
    issuedById: text('issued_by_id'),
    idempotencyKey: text('idempotency_key'),
    createdAt: integer('created_at').notNull(),
    acceptBy: integer('accept_by'),
    deadline: integer('deadline'),
    sentAt: integer('sent_at'),
    acceptedAt: integer('accepted_at'),
    startedAt: integer('started_at'),
    finishedAt: integer('finished_at'),
    cancelledAt: integer('cancelled_at'),
    cancelRequestedAt: integer('cancel_requested_at'),
    sendCount: integer('send_count').notNull(),
    version: integer('version').notNull(),
  },
  (t) => [
    index('commands_tenant').on(t.tenantId, t.id),
    index('commands_server_delivery').on(t.serverId, t.deliveryStatus),
    index('commands_expiry').on(t.executionStatus, t.deadline),
  ],
)

/** Every transition of a command, in order; the database refuses to change or remove a row. */
export const commandTimeline = sqliteTable(
  'command_timeline',
  {
    id: text('id').primaryKey(),
    commandId: text('command_id')
      .notNull()
      .references(() => commands.id),
    at: integer('at').notNull(),
    axis: text('axis', { enum: ['delivery', 'execution', 'command'] }).notNull(),
    fromState: text('from_state'),
    toState: text('to_state').notNull(),
    note: text('note'),
  },
  (t) => [index('command_timeline_command').on(t.commandId, t.id)],
)

/** The command's redacted, bounded log (64 KiB), readable at GET /commands/{id}/logs/{log_id}. */
export const commandLogs = sqliteTable('command_logs', {
  id: text('id').primaryKey(),
  commandId: text('command_id')
    .notNull()
    .references(() => commands.id),
  text: text('text').notNull(),
  bytes: integer('bytes').notNull(),
  truncated: integer('truncated', { mode: 'boolean' }).notNull(),
  updatedAt: integer('updated_at').notNull(),
})
