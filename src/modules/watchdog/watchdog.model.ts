import { Type } from '@sinclair/typebox'
import { DisplayText, Literals, Nullable, Timestamp, Uuid } from '../../platform/schemas'

/** The conditions a rule can watch for (docs/watchdog.md "Conditions"). */
const CONDITION_KINDS = ['gpu_missing', 'xid', 'utilisation_stuck'] as const
/** The rungs of a ladder; giving up and paging is always its end (docs/watchdog.md "The ladder"). */
const ACTIONS = ['notify', 'restart_runtime', 'reboot'] as const

const ConditionFields = {
  kind: Literals(CONDITION_KINDS, {
    description:
      'gpu_missing: fewer GPUs answer than the server should have; xid: the agent logged one of `xids`; utilisation_stuck: a GPU stays in the band for `minutes`',
  }),
  expected_gpus: Type.Optional(
    Nullable(Type.Integer({ minimum: 1, maximum: 128 }), {
      description: 'gpu_missing: GPUs the server should have; null: the most the watchdog has seen on it',
    }),
  ),
  xids: Type.Optional(
    Type.Array(Type.Integer({ minimum: 0, maximum: 65_535 }), { minItems: 1, maxItems: 16, uniqueItems: true, description: 'xid: the Xid numbers that count' }),
  ),
  band: Type.Optional(
    Literals(['high', 'zero'] as const, { description: 'utilisation_stuck: high, at or above `at_least_pct`; zero, at 0 % while a rental runs' }),
  ),
  at_least_pct: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'utilisation_stuck, band high: the lower bound (default 100)' })),
  minutes: Type.Optional(Type.Integer({ minimum: 5, maximum: 1440, description: 'utilisation_stuck: how long the GPU stays in the band (default 30)' })),
}

/** A condition as sent: `kind` with the fields of that kind only. */
export const ConditionInput = Type.Object(ConditionFields, { additionalProperties: false })
/** A condition as stored and shown: the fields of its kind, defaults filled in. */
const Condition = Type.Object(ConditionFields)

const StepFields = {
  action: Literals(ACTIONS, {
    description: 'notify: a notification (category error); restart_runtime: a docker.restart command; reboot: a reboot command',
  }),
  settle_minutes: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 1440,
      description: 'How long the step is given to help before the next is taken (default 10; reboot 15)',
    }),
  ),
  max_per_hour: Type.Optional(Type.Integer({ minimum: 1, maximum: 60, description: 'At most this many times an hour, per server (default 1)' })),
  max_per_day: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'At most this many times in 24 hours, per server (default 3)' })),
}
const StepInput = Type.Object(StepFields, { additionalProperties: false })
const Step = Type.Object({
  action: StepFields.action,
  settle_minutes: Type.Integer(),
  max_per_hour: Type.Integer(),
  max_per_day: Type.Integer(),
})

const Steps = Type.Array(StepInput, { minItems: 1, maxItems: 6, description: 'The ladder, first rung first; giving up and paging follows the last' })
const Name = DisplayText({ minLength: 1, maxLength: 128 })
const ServerRef = Nullable(Uuid(), { description: 'The one server the rule covers' })
const GroupRef = Nullable(Uuid(), { description: 'The group whose servers the rule covers; server_id and group_id both null: every server' })
const AllowDuringRental = Type.Boolean({
  description: 'Take restart and reboot steps while a rental runs (default false: on a rented server the watchdog only notifies)',
})

export const RuleCreate = Type.Object(
  {
    name: Name,
    enabled: Type.Optional(Type.Boolean({ description: 'Default false' })),
    server_id: Type.Optional(ServerRef),
    group_id: Type.Optional(GroupRef),
    condition: ConditionInput,
    steps: Steps,
    allow_during_rental: Type.Optional(AllowDuringRental),
  },
  { additionalProperties: false },
)

export const RulePatch = Type.Object(
  {
    name: Type.Optional(Name),
    enabled: Type.Optional(Type.Boolean()),
    server_id: Type.Optional(ServerRef),
    group_id: Type.Optional(GroupRef),
    condition: Type.Optional(ConditionInput),
    steps: Type.Optional(Steps),
    allow_during_rental: Type.Optional(AllowDuringRental),
  },
  { additionalProperties: false, minProperties: 1 },
)

const ServerState = Type.Object({
  server_id: Uuid(),
  status: Literals(['active', 'held', 'gave_up'] as const, {
    description: 'active: climbing the ladder; held: an action waits (hold_reason); gave_up: paged, nothing more until the condition clears',
  }),
  next_action: Nullable(Literals([...ACTIONS, 'page'] as const), { description: 'The rung taken next if the condition still holds; null once it gave up' }),
  since: Nullable(Timestamp({ description: 'When the condition was first seen holding' })),
  last_step_at: Nullable(Timestamp()),
  settles_at: Nullable(Timestamp({ description: 'The last step is given until then to help' })),
  hold_reason: Nullable(Type.String({ maxLength: 64, description: 'rental_running, or tolerate unknown values' })),
})

const StepTaken = Type.Object({
  id: Uuid(),
  server_id: Uuid(),
  action: Literals([...ACTIONS, 'page'] as const),
  outcome: Literals(['done', 'rate_limited', 'failed'] as const, {
    description: 'done; rate_limited: passed over, its limit reached (the ladder went on); failed: the command was refused (note says why)',
  }),
  command_id: Nullable(Uuid({ description: 'The command it issued (issued_by.id is the rule)' })),
  note: Nullable(Type.String({ maxLength: 512 })),
  at: Timestamp(),
})

export const Rule = Type.Object({
  id: Uuid(),
  name: Type.String({ maxLength: 128 }),
  preset: Nullable(Type.String({ maxLength: 32, description: 'The default rule this is (gpu_missing, xid_79, utilisation_stuck), or null' })),
  enabled: Type.Boolean(),
  server_id: ServerRef,
  group_id: GroupRef,
  condition: Condition,
  steps: Type.Array(Step),
  allow_during_rental: Type.Boolean(),
  states: Type.Array(ServerState, { description: 'Servers where the condition holds or the ladder has not reset yet; absent servers are fine' }),
  recent_steps: Type.Array(StepTaken, { maxItems: 20, description: 'The latest steps, newest first' }),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  version: Type.Integer({ minimum: 1 }),
})
export const RuleList = Type.Object({ items: Type.Array(Rule, { maxItems: 50 }) })
