import { Type } from '@sinclair/typebox'
import { Timestamp, Uuid } from '../../platform/schemas'

export const ClockBody = Type.Object(
  {
    advance_seconds: Type.Optional(Type.Number({ minimum: 0, maximum: 10 * 366 * 86400, description: 'Seconds to move forward' })),
    now: Type.Optional(Timestamp({ description: 'An instant ahead of the current "now" to jump to' })),
  },
  { additionalProperties: false, minProperties: 1, maxProperties: 1 },
)
export const ClockReply = Type.Object({ now: Timestamp() })

export const JobRunReply = Type.Object({
  job: Type.String(),
  now: Timestamp(),
  outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('partial'), Type.Literal('failed'), Type.Literal('skipped')], {
    description: '`partial`: the run went on past tenants whose part failed; the detail names them',
  }),
  detail: Type.Union([Type.String(), Type.Null()]),
})

export const ProbeBody = Type.Object({ value: Type.String({ minLength: 1, maxLength: 1024 }) }, { additionalProperties: false })
export const Probe = Type.Object({ id: Uuid(), value: Type.String(), version: Type.Integer({ minimum: 1 }), created_at: Timestamp() })

export const RateLimitBody = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    period_seconds: Type.Integer({ minimum: 1, maximum: 86_400 }),
  },
  { additionalProperties: false },
)
export const RateLimitReply = Type.Object({ remaining: Type.Integer() })

export const SlowStatementBody = Type.Object({ ms: Type.Integer({ minimum: 1, maximum: 5000 }) }, { additionalProperties: false })
export const SlowStatementReply = Type.Object({ ms: Type.Integer(), database: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')]) })
