import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Literals, Money, Nullable, Timestamp, Uuid } from '../../platform/schemas'
import { MARKETPLACES, MarketplaceId } from '../marketplaces'

const Day = Type.String({ format: 'date', description: 'UTC calendar day, YYYY-MM-DD' })

export const EarningsQuery = t.Object({
  days: t.Optional(t.Integer({ minimum: 1, maximum: 90, default: 7, description: 'Window in days, inclusive of today (UTC)' })),
})

const EarningsRow = Type.Object({
  day: Day,
  server_id: Uuid(),
  marketplace: MarketplaceId,
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
  platform_cut_percent: Nullable(
    Type.String({
      pattern: '^[0-9]{1,3}(\\.[0-9]{1,4})?$',
      description:
        "Added alongside the specification's fields: the platform's cut gpuhq applies to this row, percent: the rate entered in the cost basis for the deal currency (else the marketplace-wide one), else the platform's published default; the effective rate when the row's currencies have different ones; null when unknown",
    }),
  ),
  platform_cut_source: Literals(['entered', 'published_default', 'unknown'] as const, {
    description: 'Where platform_cut_percent comes from: entered in the cost basis, the platform’s published default, or unknown (no rate: enter one)',
  }),
  platform_cut_usd: Nullable(Money({ description: 'earn_usd_accrued × the cut, each deal currency at its own rate; null when the cut is unknown' })),
  earn_usd_net: Nullable(Money({ description: 'earn_usd_accrued minus platform_cut_usd: what should reach the host; null when the cut is unknown' })),
  reported_difference_usd: Nullable(
    Money({
      description:
        "earn_usd_day minus earn_usd_net (signed): how far the platform's own figure is from gpuhq's estimate; null when the platform reported nothing or the cut is unknown. marketplace_a's figure includes storage and bandwidth income, which the accrual does not count",
    }),
  ),
})

const CutSource = Literals(['entered', 'published_default', 'unknown'] as const)
const Reconciled = Type.Object({
  marketplace: Nullable(MarketplaceId, { description: 'null in total' }),
  gross_usd: Money({ description: "Sum of earn_usd_accrued: earned by rentals, before the platform's cut" }),
  platform_cut_usd: Nullable(Money({ description: 'Sum of platform_cut_usd; null when any row’s cut is unknown' })),
  cut_rates: Type.Array(Type.Object({ currency: Type.String({ maxLength: 32 }), percent: Nullable(Type.String()), source: CutSource }), {
    maxItems: 8,
    description: 'The rate applied per deal currency of this marketplace and where it comes from; empty in total',
  }),
  net_usd: Nullable(Money({ description: 'gross_usd minus platform_cut_usd; null when the cut is unknown' })),
  reported: Type.Object(
    {
      rows: Type.Integer({ minimum: 0, description: 'Rows the platform reported a figure for (earn_usd_day not null)' }),
      net_usd: Nullable(Money({ description: "gpuhq's net on those same rows; null when a cut is unknown" })),
      platform_usd: Money({ description: 'Sum of earn_usd_day: reported by the platform' }),
      difference_usd: Nullable(Money({ description: 'platform_usd minus net_usd (signed); null when nothing was reported or a cut is unknown' })),
    },
    { description: 'Like for like: only the machines and days the platform reported, never the whole window’s accrual against a shorter report' },
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
      marketplace: MarketplaceId,
      currency: Type.String({ maxLength: 32 }),
      usd_per_coin: Type.String({ pattern: '^[0-9]+(\\.[0-9]{1,12})?$' }),
      observed_at: Nullable(Timestamp({ description: 'When the rate was read; null for the dollar' })),
    }),
    { description: 'A currency absent here is not converted' },
  ),
  reconciliation: Type.Object(
    {
      total: Reconciled,
      by_marketplace: Type.Array(Reconciled, { maxItems: MARKETPLACES.length }),
      labels: Type.Record(Type.String(), Type.String(), { description: 'The words a host reads for each figure (console captions)' }),
    },
    {
      description:
        "Added alongside the specification's fields (docs/earnings.md \"Reconciliation\"): over the window's rows, gross accrued, the platform's cut, net, and the platform-reported figure beside gpuhq's net on the same rows, with the difference",
    },
  ),
  total_label: Type.String({
    description:
      "The label any total built from these rows must carry: they are the marketplaces' numbers and gpuhq's estimate from them, not a ledger, and the platforms' windows roll",
  }),
})
