import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { servers } from './fleet'
import { tenants } from './tenants'

/** What a watchdog rule watches for (docs/watchdog.md "Conditions"). */
export type WatchdogCondition =
  | { kind: 'gpu_missing'; expected_gpus: number | null }
  | { kind: 'xid'; xids: number[] }
  | { kind: 'utilisation_stuck'; band: 'high' | 'zero'; at_least_pct: number; minutes: number }

/** One rung of a rule's ladder (docs/watchdog.md "The ladder"). */
export type WatchdogStep = { action: 'notify' | 'restart_runtime' | 'reboot'; settle_minutes: number; max_per_hour: number; max_per_day: number }

/**
 * The owner's watchdog rules: a condition on a server, a group or every server of the tenant, and
 * the ladder of steps taken while it holds. The default rules carry their `preset` (one per tenant).
 */
export const watchdogRules = sqliteTable(
  'watchdog_rules',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    name: text('name').notNull(),
    preset: text('preset'),
    enabled: integer('enabled', { mode: 'boolean' }).notNull(),
    /** When it was last turned on (an Xid logged before it says nothing). */
    enabledAt: integer('enabled_at'),
    /** Both null: every server of the tenant. */
    serverId: text('server_id'),
    groupId: text('group_id'),
    condition: text('condition', { mode: 'json' }).$type<WatchdogCondition>().notNull(),
    steps: text('steps', { mode: 'json' }).$type<WatchdogStep[]>().notNull(),
    allowDuringRental: integer('allow_during_rental', { mode: 'boolean' }).notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    version: integer('version').notNull(),
  },
  (t) => [index('watchdog_rules_tenant').on(t.tenantId, t.createdAt), uniqueIndex('watchdog_rules_preset').on(t.tenantId, t.preset)],
)

/** Where each rule's ladder stands on each server it covers (no row: nothing holds). */
export const watchdogStates = sqliteTable(
  'watchdog_states',
  {
    ruleId: text('rule_id')
      .notNull()
      .references(() => watchdogRules.id),
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    tenantId: text('tenant_id').notNull(),
    status: text('status', { enum: ['ok', 'active', 'held', 'gave_up'] }).notNull(),
    /** The next step of the ladder to take (steps.length: past the last one). */
    stepIndex: integer('step_index').notNull(),
    /** When the condition was first seen holding in this occurrence. */
    since: integer('since'),
    lastStepAt: integer('last_step_at'),
    /** An Xid counts when logged after this (the rule turned on, the last step, the last recovery). */
    referenceAt: integer('reference_at').notNull(),
    holdReason: text('hold_reason'),
    notified: integer('notified', { mode: 'boolean' }).notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.ruleId, t.serverId] }), index('watchdog_states_tenant').on(t.tenantId)],
)

/** Every step a rule took or passed over on a server: the rate limits count these. */
export const watchdogSteps = sqliteTable(
  'watchdog_steps',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    ruleId: text('rule_id')
      .notNull()
      .references(() => watchdogRules.id),
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    action: text('action', { enum: ['notify', 'restart_runtime', 'reboot', 'page'] }).notNull(),
    outcome: text('outcome', { enum: ['done', 'rate_limited', 'failed'] }).notNull(),
    commandId: text('command_id'),
    note: text('note'),
    at: integer('at').notNull(),
  },
  (t) => [index('watchdog_steps_rule').on(t.ruleId, t.serverId, t.at)],
)

/**
 * What the watchdog remembers of a server between evaluations, kept from its events and readings:
 * `xid` (key the Xid number, `at` the latest), `gpu_missing` (key the GPU index, until it returns
 * or the server comes back online), `gpus_max` (value the most GPUs seen), `util` (key the GPU
 * index, `at` since when its utilisation stays in a rule's band, value the band's lower bound).
 */
export const watchdogSignals = sqliteTable(
  'watchdog_signals',
  {
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    tenantId: text('tenant_id').notNull(),
    kind: text('kind').notNull(),
    key: text('key').notNull(),
    value: integer('value'),
    at: integer('at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.serverId, t.kind, t.key] })],
)
