import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Literals, Money, Nullable, Timestamp, Uuid } from '../../platform/schemas'

const Day = Type.String({ format: 'date', description: 'UTC calendar day, YYYY-MM-DD' })
const Marketplace = Literals(['marketplace_a', 'marketplace_b'] as const)

export const EarningsQuery = t.Object({
  days: t.Optional(t.Integer({ minimum: 1, maximum: 90, default: 7, description: 'Window in days, inclusive of today (UTC)' })),
})

const EarningsRow = Type.Object({
  day: Day,
  server_id: Uuid(),
  marketplace: Marketplace,
  earn_usd_day: Nullable(
    Money({ description: "The platform's own figure after its cut; null when the platform said nothing; always null on marketplace_b (no earnings report)" }),
  ),
  earn_usd_accrued: Money({
    description:
      "gpuhq's own count of running deals' price × time, before the platform's cut, computed identically on both marketplaces; fleet totals are summed from this field only",
  }),
  accrued_seconds: Type.Integer({ minimum: 0, description: 'Rented seconds behind the accrual' }),
  accrual_gap_seconds: Type.Integer({
    minimum: 0,
    description:
      'Seconds of a known-running rental not counted because the sync stayed silent past its cap (15 min); non-zero means earn_usd_accrued is understated by that time',
  }),
  samples: Type.Integer({ minimum: 1, description: 'Times the day was sampled' }),
  by_currency: Type.Array(
    Type.Object({
      currency: Type.String({
        maxLength: 32,
        description: "The marketplace's own spelling (USD on marketplace_a; bitcoin, CLORE-Blockchain, USD-Blockchain on marketplace_b)",
      }),
      amount: Type.String({ pattern: '^[0-9]+(\\.[0-9]{1,12})?$', description: 'Coin amount earned (a measurement, up to 12 fraction digits)' }),
      usd: Money({ description: 'USD at the rates of the accrual moments (non-negative)' }),
    }),
    { description: 'Per deal currency; empty for an idle day' },
  ),
})

export const Earnings = Type.Object({
  days: Type.Integer({ minimum: 1, maximum: 90 }),
  items: Type.Array(EarningsRow, { maxItems: 8192 }),
  collected_since: Nullable(
    Type.String({ format: 'date', description: 'Earliest day on record; null: nothing recorded yet (not the same as earned nothing)' }),
  ),
  accrued_since: Nullable(Type.String({ format: 'date', description: 'Earliest day with accrued_seconds above 0' })),
  current_rates: Type.Array(
    Type.Object({
      marketplace: Marketplace,
      currency: Type.String({ maxLength: 32 }),
      usd_per_coin: Type.String({ pattern: '^[0-9]+(\\.[0-9]{1,12})?$' }),
      observed_at: Nullable(Timestamp({ description: 'When the rate was read; null for the dollar' })),
    }),
    { description: 'A currency absent here is not converted' },
  ),
  total_label: Type.String({
    description:
      "The label any total built from these rows must carry: they are the marketplaces' numbers and gpuhq's estimate from them, not a ledger, and the platforms' windows roll",
  }),
})
