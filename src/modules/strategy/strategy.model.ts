import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { DisplayText, Literals, Money, Nullable, PageOf, PageQuery, Timestamp, Uuid } from '../../platform/schemas'
import { describedMarketplaceId } from '../marketplaces'

/** Wire schemas of pricing strategy (docs/strategy.md). */

const MARKETPLACE = describedMarketplaceId('The marketplace the policy prices on')
const COINS = ['bitcoin', 'CLORE-Blockchain', 'USD-Blockchain'] as const
const Percent = (description: string) => Type.String({ pattern: '^(0|[1-9][0-9]{0,2})(\\.[0-9]{1,4})?$', maxLength: 8, description })

const Target = Type.Object(
  {
    server_ids: Type.Optional(Type.Array(Uuid(), { minItems: 1, maxItems: 100, uniqueItems: true, description: 'These servers' })),
    group_id: Type.Optional(Uuid({ description: 'Every server of this group' })),
    gpu_model: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9][a-z0-9_]{0,63}$',
        description: 'Every server of this normalised GPU model (the key of `remote.gpu_model`, e.g. rtx_4090)',
      }),
    ),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    maxProperties: 1,
    description: 'Exactly one of server_ids, group_id, gpu_model. Only offers listed on the marketplace through a live link are priced.',
  },
)

const fields = {
  name: DisplayText({ minLength: 1, maxLength: 128 }),
  marketplace: MARKETPLACE,
  target: Target,
  min_margin_percent: Percent('Margin kept above cost, in percent of cost (0..999.9999); default "0"'),
  target_percentile: Type.Integer({
    minimum: 0,
    maximum: 100,
    description: "Where in the model's market the price sits: 0 the cheapest ask, 50 the median (default), 100 the dearest",
  }),
  ceiling_gpu_hour: Nullable(
    Money({
      description:
        'Never above this, USD per GPU-hour, above 0 and at most 1000000000 (422 too_small / too_large); null: no ceiling. The floor wins when it is above the ceiling',
    }),
  ),
  rounding_step: Money({ description: 'Prices are multiples of this, USD per GPU-hour, 0.000001..10; default "0.01"' }),
  cadence_minutes: Type.Integer({ minimum: 15, maximum: 10080, description: 'How often strategy.suggest looks again (15 minutes .. 7 days); default 60' }),
  raise_while_rented: Literals(['hold', 'allow'] as const, {
    description:
      'marketplace_a only: `hold` (default) keeps the price while renters run (Vast turns a raise into a pending increase each renter must accept, and stops their auto-extend meanwhile); `allow` raises anyway, with a warning',
  }),
  coin: Literals(COINS, {
    description:
      'marketplace_b only: the coin a server with no coin price yet is priced in (default USD-Blockchain); a server already priced in coins gets the new price in each of them',
  }),
  enabled: Type.Boolean({ description: 'A disabled policy makes no suggestions; default true' }),
}

export const PolicyCreate = Type.Object(
  {
    name: fields.name,
    marketplace: fields.marketplace,
    target: fields.target,
    min_margin_percent: Type.Optional(fields.min_margin_percent),
    target_percentile: Type.Optional(fields.target_percentile),
    ceiling_gpu_hour: Type.Optional(fields.ceiling_gpu_hour),
    rounding_step: Type.Optional(fields.rounding_step),
    cadence_minutes: Type.Optional(fields.cadence_minutes),
    raise_while_rented: Type.Optional(fields.raise_while_rented),
    coin: Type.Optional(fields.coin),
    enabled: Type.Optional(fields.enabled),
  },
  { additionalProperties: false },
)

export const PolicyPatch = Type.Object(
  {
    name: Type.Optional(fields.name),
    target: Type.Optional(fields.target),
    min_margin_percent: Type.Optional(fields.min_margin_percent),
    target_percentile: Type.Optional(fields.target_percentile),
    ceiling_gpu_hour: Type.Optional(fields.ceiling_gpu_hour),
    rounding_step: Type.Optional(fields.rounding_step),
    cadence_minutes: Type.Optional(fields.cadence_minutes),
    raise_while_rented: Type.Optional(fields.raise_while_rented),
    coin: Type.Optional(fields.coin),
    enabled: Type.Optional(fields.enabled),
  },
  { additionalProperties: false, minProperties: 1, description: 'Only the fields given change; the marketplace of a policy is fixed' },
)

/** POST /strategy/preview: a policy body that is evaluated, never saved (the name may be left out). */
export const PreviewBody = Type.Object({ ...PolicyCreate.properties, name: Type.Optional(fields.name) }, { additionalProperties: false })

export const Policy = Type.Object({
  id: Uuid(),
  name: Type.String(),
  marketplace: MARKETPLACE,
  target: Type.Object({
    server_ids: Type.Optional(Type.Array(Uuid())),
    group_id: Type.Optional(Uuid()),
    gpu_model: Type.Optional(Type.String()),
  }),
  min_margin_percent: Type.String(),
  target_percentile: Type.Integer(),
  ceiling_gpu_hour: Nullable(Money()),
  rounding_step: Money(),
  cadence_minutes: Type.Integer(),
  raise_while_rented: Nullable(Literals(['hold', 'allow'] as const), { description: 'null on marketplace_b' }),
  coin: Nullable(Literals(COINS), { description: 'null on marketplace_a' }),
  enabled: Type.Boolean(),
  version: Type.Integer({ description: 'Monotonic; the ETag' }),
  last_run_at: Nullable(Timestamp({ description: 'When strategy.suggest last looked at it' })),
  created_at: Timestamp(),
  updated_at: Timestamp(),
})

export const PolicyList = Type.Object({ items: Type.Array(Policy, { maxItems: 50 }) })

const Warning = Type.Object({
  code: Literals(['pending_price_increase', 'lowering_limited', 'floor_above_ceiling', 'estimated_floor'] as const),
  message: Type.String({ maxLength: 512 }),
})

/** What a policy concluded for one offer: the price, why, and what the change is expected to earn. */
const Evaluation = {
  server_id: Uuid(),
  marketplace: MARKETPLACE,
  gpu_model: Type.String(),
  gpu_count: Type.Integer(),
  current_price_gpu_hour: Nullable(
    Money({ description: 'The offer as the platform lists it now, USD per GPU-hour (marketplace_b: its per-day coin price converted)' }),
  ),
  suggested_price_gpu_hour: Money({ description: 'What the policy would set, USD per GPU-hour' }),
  change: Literals(['raise', 'lower', 'none'] as const),
  bound_by: Literals(['market', 'floor', 'ceiling', 'held_for_renters', 'no_market'] as const, {
    description:
      'What decided the price: the market percentile, the floor, the ceiling, a raise held while renters run (marketplace_a, raise_while_rented hold), or no market data for the model (then the current price, kept inside floor and ceiling)',
  }),
  market: Type.Object({
    offers: Type.Integer({ description: 'Other asking prices of the model in the latest snapshot' }),
    taken_at: Nullable(Timestamp()),
    target_percentile: Type.Integer(),
    price_at_percentile: Nullable(Money()),
    suggested_percentile: Nullable(Type.Number({ description: 'Where the suggested price would stand (mid-rank percentile, one decimal)' })),
  }),
  floor: Type.Object({
    price_gpu_hour: Money({ description: '(electricity + operational + gpuhq charge) × (1 + margin) ÷ (1 − commission), rounded up' }),
    cost_gpu_hour: Money({ description: 'The three costs per GPU-hour added up' }),
    electricity_gpu_hour: Nullable(Money()),
    operational_gpu_hour: Nullable(Money()),
    gpuhq_charge_gpu_hour: Nullable(Money()),
    commission_percent: Nullable(Type.String()),
    min_margin_percent: Type.String(),
    estimate: Type.Boolean({ description: 'True when an input is missing (named in `missing`) and the floor was computed without it' }),
    missing: Type.Array(Type.String()),
  }),
  ceiling_gpu_hour: Nullable(Money()),
  occupancy: Nullable(Type.Number({ description: 'Share of the full-price capacity the offer earned over the last 7 days (0..1, three decimals)' })),
  expected_change_usd_day: Nullable(
    Money({
      description:
        '(suggested − current) × GPUs × 24 × occupancy: the change in daily earnings at the same occupancy; null with no current price or occupancy, or when it would leave the money range',
    }),
  ),
  offer: Type.Object(
    {
      price_gpu_hour: Type.Optional(Money()),
      coin_prices: Type.Optional(Type.Record(Type.String(), Type.Object({ on_demand: Type.String() }))),
    },
    { description: 'The exact body accepting publishes through PUT /marketplaces/links/{server_id}/{marketplace}/offer' },
  ),
  reasons: Type.Array(Type.String(), { description: 'The decision in words' }),
  warnings: Type.Array(Warning),
}

export const PreviewAnswer = Type.Object({
  evaluated_at: Timestamp(),
  items: Type.Array(Type.Object(Evaluation), { maxItems: 512 }),
  skipped: Type.Array(Type.Object({ server_id: Uuid(), reason: Type.String() }), {
    description:
      'Targeted servers that could not be priced, and why: no listed offer, no GPU model or count, no exchange rate, a commission of 100 %, costs or a floor above the money range (1000000000 USD per GPU-hour), a price that would be zero',
  }),
})

export const Suggestion = Type.Object({
  id: Uuid(),
  policy_id: Uuid(),
  state: Literals(['pending', 'accepting', 'accepted', 'dismissed', 'superseded'] as const),
  created_at: Timestamp(),
  decided_at: Nullable(Timestamp()),
  decided_by: Nullable(Uuid({ description: 'The member who accepted or dismissed it' })),
  dismiss_reason: Nullable(Type.String()),
  outcome: Nullable(
    Type.Object({
      warnings: Type.Array(Type.Object({ code: Type.String(), message: Type.String() })),
      extended_contracts: Nullable(Type.Integer()),
    }),
    { description: 'What the marketplace answered when it was accepted' },
  ),
  ...Evaluation,
})

export const SuggestionList = PageOf(Suggestion)

export const SuggestionsQuery = t.Object({
  ...PageQuery,
  state: t.Optional(Literals(['pending', 'accepting', 'accepted', 'dismissed', 'superseded'] as const)),
  policy_id: t.Optional(t.String({ format: 'uuid' })),
  server_id: t.Optional(t.String({ format: 'uuid' })),
  marketplace: t.Optional(MARKETPLACE),
})

export const DismissBody = Type.Object(
  { reason: DisplayText({ minLength: 1, maxLength: 500, description: 'Why the price was not taken' }) },
  { additionalProperties: false },
)

export const IdParams = t.Object({ id: t.String({ format: 'uuid' }) })
