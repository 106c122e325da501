import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { Literals, Money, Nullable, Timestamp, Uuid } from '../../platform/schemas'
import { PLAN_CODE_PATTERN, Plan } from '../plans'

const PlanCode = Type.String({ pattern: PLAN_CODE_PATTERN, minLength: 2, maxLength: 64 })

export const QuoteQuery = t.Object({ plan: t.String({ pattern: PLAN_CODE_PATTERN, description: 'A plan code from GET /plans' }) })

export const Quote = Type.Object({
  target_plan: PlanCode,
  current_plan: Nullable(PlanCode),
  direction: Literals(['upgrade', 'downgrade', 'lateral']),
  managed_servers: Type.Integer(),
  monthly_price_per_server_usd: Nullable(Money()),
  unit_daily_rate_usd: Nullable(Money()),
  required_reserve_usd: Money(),
  balance_usd: Money(),
  covered: Type.Boolean(),
  server_limit: Nullable(Type.Integer()),
  billing_effective_day: Type.String({ format: 'date' }),
  quoted_at: Timestamp(),
})

export const Change = Type.Object({
  id: Uuid(),
  status: Literals(['applied', 'scheduled', 'awaiting_payment', 'cancelled', 'refused']),
  direction: Literals(['upgrade', 'downgrade', 'lateral'], { description: 'At order time; explanatory only' }),
  from_plan: PlanCode,
  target_plan: PlanCode,
  effective_at: Timestamp(),
  billing_effective_day: Type.String({ format: 'date', description: 'First UTC day the new price applies' }),
  required_reserve_usd: Money({ description: 'One day of the target plan at the current fleet, when gated' }),
  refusal_reason: Nullable(Literals(['reserve_not_covered', 'direction_changed'])),
  topup_id: Nullable(Uuid()),
  requested_at: Timestamp(),
  applied_at: Nullable(Timestamp()),
  cancelled_at: Nullable(Timestamp()),
  refused_at: Nullable(Timestamp()),
})

export const ChangeOrder = Type.Object(
  {
    target_plan: PlanCode,
    topup_id: Type.Optional(Uuid({ description: "A top-up of the tenant whose success pays for this upgrade (unknown or another tenant's: 404)" })),
  },
  { additionalProperties: false },
)

export const Subscription = Type.Object({
  plan: Nullable(Plan),
  pending_change: Nullable(Change),
  last_change: Nullable(Change),
  account_state: Type.String(),
  version: Type.Integer(),
})

export const CurrentPlan = Type.Object({
  plan: Nullable(Plan),
  usage: Type.Object({ managed_servers: Type.Integer(), servers_left: Nullable(Type.Integer({ description: 'null means unlimited' })) }),
  account_state: Type.String(),
})
