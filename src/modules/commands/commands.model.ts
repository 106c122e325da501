import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Literals, Nullable, PageOf, PageQuery, Timestamp, Uuid } from '../../platform/schemas'
import { CATALOGUE } from './commands.catalogue'

const DeliveryStatus = Literals(['queued', 'routing', 'sent', 'accepted', 'delivery_failed'])
const ExecutionStatus = Literals(['not_started', 'running', 'succeeded', 'failed', 'cancelled', 'expired'])
const Requires = Type.Union([Type.Literal('none'), Type.Literal('idle'), Type.Literal('after_rental')])

export const CommandCreate = Type.Object(
  {
    server_id: Uuid(),
    type: Type.String({ pattern: '^[a-z][a-z0-9_.-]{1,63}$', description: `One of: ${CATALOGUE.map((c) => c.type).join(', ')}` }),
    params: Type.Record(Type.String(), Type.Unknown(), { description: "As the type's schema says (GET /commands/catalogue)" }),
    requires: Type.Optional(Requires),
    accept_by: Type.Optional(Timestamp({ description: 'Latest moment the agent must accept it; default now + 24 h' })),
    deadline: Type.Optional(Timestamp({ description: 'Latest moment it must finish; default accept_by + 1 h; at most 30 days ahead' })),
  },
  { additionalProperties: false },
)

/** GET /commands (Elysia's `t`, which coerces query strings). */
export const CommandListQuery = t.Object({
  ...PageQuery,
  server_id: t.Optional(t.String({ format: 'uuid' })),
  delivery_status: t.Optional(DeliveryStatus),
  execution_status: t.Optional(ExecutionStatus),
  type: t.Optional(t.String({ maxLength: 64 })),
})

export const TimelineQuery = t.Object({ ...PageQuery })

const CommandError = Type.Object({
  code: Type.String({ pattern: '^[a-z][a-z0-9_]{1,63}$' }),
  message: Type.String({ maxLength: 1024 }),
  retryable: Type.Boolean(),
  stage: Nullable(Type.String({ maxLength: 64 })),
  details: Nullable(Type.Record(Type.String(), Type.Unknown())),
  log_ref: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
})

export const Command = Type.Object({
  command_id: Uuid(),
  tenant_id: Uuid(),
  server_id: Uuid(),
  type: Type.String(),
  schema_version: Type.Integer({ minimum: 1 }),
  params: Type.Record(Type.String(), Type.Unknown()),
  requires: Requires,
  delivery_status: DeliveryStatus,
  execution_status: ExecutionStatus,
  queue_reason: Nullable(
    Type.String({ maxLength: 64, description: 'server_offline, awaiting_retry, awaiting_idle, awaiting_rental_end; tolerate unknown values' }),
  ),
  progress: Nullable(Type.Integer({ minimum: 0, maximum: 100 })),
  result: Nullable(Type.Record(Type.String(), Type.Unknown())),
  error: Nullable(CommandError),
  issued_by: Type.Object({
    type: Type.Union([Type.Literal('user'), Type.Literal('pat'), Type.Literal('agent'), Type.Literal('system')]),
    id: Type.Optional(Uuid()),
  }),
  idempotency_key: Nullable(Type.String({ maxLength: 128 })),
  created_at: Timestamp(),
  accept_by: Nullable(Timestamp()),
  deadline: Nullable(Timestamp()),
  sent_at: Nullable(Timestamp()),
  accepted_at: Nullable(Timestamp()),
  started_at: Nullable(Timestamp()),
  finished_at: Nullable(Timestamp()),
  cancelled_at: Nullable(Timestamp()),
  version: Type.Integer(),
})
export const CommandPage = PageOf(Command, { maxItems: 200 })
export const TimelinePage = PageOf(
  Type.Object({ id: Uuid(), at: Timestamp(), axis: Type.String(), from: Nullable(Type.String()), to: Type.String(), note: Nullable(Type.String()) }),
)
export const CommandLog = Type.Object({
  log_id: Uuid(),
  command_id: Uuid(),
  text: Type.String(),
  bytes: Type.Integer(),
  truncated: Type.Boolean(),
  updated_at: Timestamp(),
})
export const Catalogue = Type.Object({
  items: Type.Array(
    Type.Object({ type: Type.String(), schema_version: Type.Integer(), dangerous: Type.Boolean(), description: Type.String(), params: Type.Unknown() }),
  ),
})
