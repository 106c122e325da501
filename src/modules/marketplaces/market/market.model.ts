import { type TNull, type TString, type TUnion, Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Money, Nullable, Timestamp, Uuid } from '../../../platform/schemas'
import { MARKETPLACES, MarketplaceId } from '../../../platform/marketplace-id'

const Model = Type.String({ maxLength: 128, description: 'Normalised GPU model key (the same as remote.gpu_model), e.g. rtx_4090' })
const TakenAt = Type.Object(Object.fromEntries(MARKETPLACES.map((m) => [m, Nullable(Timestamp())])) as Record<MarketplaceId, TUnion<[TString, TNull]>>, {
  description: 'When each marketplace was last read (null: never yet)',
})

const Summary = {
  offers: Type.Integer({ minimum: 0, description: 'Rentable offers with a price' }),
  gpus: Type.Integer({ minimum: 0, description: 'GPUs those offers hold' }),
  min: Money(),
  p25: Money(),
  median: Money(),
  p75: Money(),
  max: Money({ description: 'USD per GPU-hour; quartiles by linear interpolation between ranks' }),
  taken_at: Timestamp(),
}
const MarketSummary = Type.Object(Summary)

export const StatsQuery = t.Object({
  marketplace: t.Optional(MarketplaceId),
  gpu_model: t.Optional(t.String({ maxLength: 128 })),
})

export const Stats = Type.Object({
  taken_at: TakenAt,
  items: Type.Array(Type.Object({ marketplace: MarketplaceId, gpu_model: Model, ...Summary })),
})

export const Supply = Type.Object({
  taken_at: TakenAt,
  items: Type.Array(
    Type.Object({
      marketplace: MarketplaceId,
      gpu_model: Model,
      my_offers: Type.Integer({ minimum: 0, description: 'Your linked machines listed there with this model' }),
      my_gpus: Type.Integer({ minimum: 0, description: 'The GPUs of those machines, rented or not' }),
      my_gpus_for_rent: Type.Integer({
        minimum: 0,
        description: 'Of my_gpus, those free to rent now (listed less rented), counted as the market search counts GPUs',
      }),
      market_offers: Type.Integer({ minimum: 0, description: 'Offers of this model rentable now in the latest market snapshot (yours included)' }),
      market_gpus: Type.Integer({ minimum: 0, description: 'Their GPUs, free to rent now (yours included)' }),
      share_of_gpus: Nullable(
        Type.Number({
          minimum: 0,
          maximum: 1,
          description:
            'my_gpus_for_rent ÷ market_gpus: your part of what can be rented now (at most 1, when the snapshot is older than your listing); null without market GPUs',
        }),
      ),
    }),
  ),
})

export const Prices = Type.Object({
  taken_at: TakenAt,
  items: Type.Array(
    Type.Object({
      server_id: Uuid(),
      marketplace: MarketplaceId,
      external_machine_id: Type.String({ maxLength: 128 }),
      gpu_model: Nullable(Model),
      price_gpu_hour: Nullable(Money({ description: 'Your asking price in USD per GPU-hour (marketplace_b: converted from the per-day coin price)' })),
      market: Nullable(MarketSummary),
    }),
  ),
})

export const Standing = Type.Object({
  taken_at: TakenAt,
  items: Type.Array(
    Type.Object({
      server_id: Uuid(),
      marketplace: MarketplaceId,
      gpu_model: Nullable(Model),
      price_gpu_hour: Nullable(Money()),
      market_offers: Type.Integer({ minimum: 0 }),
      cheaper: Nullable(Type.Integer({ minimum: 0 })),
      equal: Nullable(Type.Integer({ minimum: 0 })),
      dearer: Nullable(Type.Integer({ minimum: 0 })),
      percentile: Nullable(
        Type.Number({ minimum: 0, maximum: 100, description: '100 × (cheaper + equal ÷ 2) ÷ market offers, one decimal: 50 is the middle of the market' }),
      ),
      median: Nullable(Money()),
    }),
  ),
})

export const MovementQuery = t.Object({
  days: t.Optional(t.Integer({ minimum: 1, maximum: 90, description: 'Look-back window in days (default 7)' })),
  marketplace: t.Optional(MarketplaceId),
  gpu_model: t.Optional(t.String({ maxLength: 128 })),
})

export const Movement = Type.Object({
  days: Type.Integer(),
  items: Type.Array(
    Type.Object({
      marketplace: MarketplaceId,
      gpu_model: Model,
      from: Nullable(MarketSummary),
      to: MarketSummary,
      median_change: Nullable(Money({ description: 'to.median − from.median, USD per GPU-hour (may be negative)' })),
      median_change_percent: Nullable(Type.Number()),
    }),
  ),
})
