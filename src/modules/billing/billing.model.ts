import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { Literals, Money, Nullable, PageQuery, Timestamp, Uuid } from '../../platform/schemas'
import { BILLING_RANGES } from '../../platform/zoned'

const Tile = Type.Object({ spend_usd: Money(), from: Timestamp(), to: Timestamp() })

export const Billing = Type.Object({
  balance_usd: Money(),
  account_state: Literals(['active', 'grace', 'frozen']),
  grace_since: Nullable(Timestamp()),
  grace_ends_at: Nullable(Timestamp({ description: 'When the account freezes unless the balance is back to zero or above' })),
  frozen_at: Nullable(Timestamp()),
  tariff: Type.Object({
    plan: Nullable(Type.String()),
    label: Nullable(Type.String()),
    monthly_price_per_server_usd: Nullable(Money()),
    contract_priced: Type.Boolean(),
    servers_max: Nullable(Type.Integer({ description: 'fleet.servers.max; null means unlimited' })),
  }),
  estimate: Type.Object({
    managed_servers: Type.Integer(),
    per_day_usd: Nullable(Money()),
    per_month_usd: Nullable(Money()),
    days_in_month: Type.Integer(),
  }),
  days_left: Nullable(Type.Integer({ description: 'Whole days the balance covers at the current fleet; null when nothing is charged' })),
  timezone: Type.String({ description: "Zone the tiles are computed in (the member's own)" }),
  tiles: Type.Object(
    { today: Tile, yesterday: Tile, '7d': Tile, month: Tile, prev_month: Tile },
    { description: 'Spend per period: minus the sum of charge and adjustment rows; top-ups excluded' },
  ),
})

export const LedgerEntry = Type.Object({
  id: Uuid(),
  tenant_id: Uuid(),
  kind: Literals(['charge', 'topup', 'adjustment']),
  amount_usd: Money(),
  balance_after_usd: Money(),
  occurred_at: Timestamp(),
  charge_day: Nullable(Type.String({ format: 'date' })),
  charge_hour: Nullable(Timestamp()),
  detail: Type.String({ maxLength: 512 }),
  calculation_id: Nullable(Uuid()),
  created_at: Timestamp(),
})

export const LedgerQuery = t.Object({
  ...PageQuery,
  kind: t.Optional(Literals(['charge', 'topup', 'adjustment'])),
  range: t.Optional(Literals(BILLING_RANGES, { description: "Expanded in the member's time zone by the same code as the tiles; exclusive with from/to" })),
  from: t.Optional(t.String({ maxLength: 64, description: 'RFC 3339; inclusive, on occurred_at' })),
  to: t.Optional(t.String({ maxLength: 64, description: 'RFC 3339; exclusive' })),
})

export const ChargeDaysQuery = t.Object({ ...PageQuery })

export const ChargeDay = Type.Object({
  day: Type.String({ format: 'date' }),
  amount_usd: Money(),
  hours: Type.Integer(),
  server_hours: Type.Integer(),
  csv: Type.String(),
})
