import { type TOptional, Type } from '@sinclair/typebox'
import { Literals, Money, Nullable } from '../../platform/schemas'
import { MARKETPLACES, MarketplaceId } from '../marketplaces'

/** A percentage as a decimal string, 0 to 100 with up to 4 decimals; zero is refused for commissions. */
const Percent = (description?: string) =>
  Type.String({ pattern: '^(100(\\.0{1,4})?|[0-9]{1,2}(\\.[0-9]{1,4})?)$', maxLength: 8, ...(description ? { description } : {}) })
const Markup = Type.String({ pattern: '^[0-9]{1,4}(\\.[0-9]{1,4})?$', maxLength: 9, description: 'Renter markup, percent (0 to 9999.9999)' })

const Commission = Type.Object({
  currency: Type.String({ maxLength: 32, description: "The marketplace's own spelling of the deal currency" }),
  label: Type.String({ maxLength: 64 }),
  key: Type.String({ maxLength: 96, description: "The key to write this currency's own rate: marketplaces.<marketplace>.commissions.<currency> in PUT" }),
  percent: Nullable(Percent("Resolved: the currency's own rate, else the marketplace-wide one; null when neither is entered")),
  source: Nullable(Literals(['currency', 'marketplace'] as const, { description: 'Where percent came from' })),
})

export const CostBasis = Type.Object({
  currency: Type.Literal('USD'),
  electricity_usd_per_kwh: Nullable(
    Money({ description: "Fleet-wide tariff; a server's own tariff (PATCH /servers/{id}) wins for that server. null: not entered" }),
  ),
  operational: Type.Object({
    usd_per_month: Nullable(Money({ description: 'Rent, staff, connectivity…; null: not entered' })),
    spread: Nullable(
      Type.Object({
        method: Type.Literal('billable_server_days'),
        period: Type.String({ pattern: '^[0-9]{4}-[0-9]{2}$', description: 'The month spread over (UTC)' }),
        billable_server_days: Type.Number({
          minimum: 0,
          description:
            "The denominator: server-days charged so far this month (the charge journal's server-hours ÷ 24) plus today's managed servers for the days left",
        }),
        usd_per_server_day: Money(),
      }),
      { description: 'null when usd_per_month is not entered or there is nothing to divide by' },
    ),
  }),
  marketplaces: Type.Array(
    Type.Object({
      marketplace: MarketplaceId,
      commission_percent: Nullable(Percent('The marketplace-wide fallback; null: not entered')),
      commissions: Type.Array(Commission),
      renter_markup_percent: Nullable(
        Type.String({
          description: "Converts a catalogue price (what renters see) into the owner's own by dividing by one plus markup; not an expense. null: not entered",
        }),
      ),
    }),
  ),
  defaults: Type.Array(
    Type.Object({
      key: Type.String({ maxLength: 96 }),
      value: Type.String({ maxLength: 32 }),
      source: Type.String({ maxLength: 128 }),
      reason: Type.String({ maxLength: 256 }),
    }),
    { description: 'What the margin calculation uses where nothing is entered, from the same code that calculates' },
  ),
  rental_revenue: Nullable(
    Type.Object({
      source: Type.Literal('marketplace_accrual'),
      today_usd: Money(),
      mtd_usd: Money(),
      by_marketplace: Type.Array(Type.Object({ marketplace: MarketplaceId, today_usd: Money(), mtd_usd: Money() })),
    }),
    { description: "From GET /marketplaces/earnings' accrual (UTC days), before the platforms' cut; null while no earnings row exists this month" },
  ),
  unknown: Type.Array(Type.Object({ field: Type.String({ maxLength: 96 }), reason: Type.String({ maxLength: 256 }) })),
  version: Type.Integer({ minimum: 0, description: 'The ETag is this version; PUT takes If-Match' }),
})

const COMMISSION_IN = 'Percent above 0 and at most 90 (422 too_large above, zero_not_allowed at 0: send null for "not entered")'
const MarketplacePatch = Type.Object(
  {
    commission_percent: Type.Optional(Nullable(Percent(`The marketplace-wide fallback. ${COMMISSION_IN}`))),
    commissions: Type.Optional(
      Type.Record(Type.String({ maxLength: 32 }), Nullable(Percent(COMMISSION_IN)), {
        maxProperties: 8,
        description: "Per deal currency, in the marketplace's spelling",
      }),
    ),
    renter_markup_percent: Type.Optional(Nullable(Markup)),
  },
  { additionalProperties: false },
)

export const CostBasisPatch = Type.Object(
  {
    electricity_usd_per_kwh: Type.Optional(Nullable(Money({ description: 'USD per kWh, 0 to 10 (422 too_large above); null clears it' }))),
    operational: Type.Optional(
      Type.Object(
        { usd_per_month: Nullable(Money({ description: 'USD per month, 0 to 10000000 (422 too_large above); null clears it' })) },
        { additionalProperties: false },
      ),
    ),
    marketplaces: Type.Optional(
      Type.Object(
        Object.fromEntries(MARKETPLACES.map((m) => [m, Type.Optional(MarketplacePatch)])) as Record<MarketplaceId, TOptional<typeof MarketplacePatch>>,
        { additionalProperties: false, minProperties: 1 },
      ),
    ),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description:
      'A partial update. The bounds keep every derived figure (the spread, the margin, the pricing floor) inside the money range: tariff at most 10 USD per kWh, operational cost at most 10,000,000 USD per month, commissions above 0 and at most 90 %.',
  },
)

const Figures = {
  earned_usd: Money({ description: "Accrued from running deals, before the platforms' cut (GET /marketplaces/earnings' earn_usd_accrued)" }),
  platform_cut_usd: Nullable(
    Money({ description: 'The commission entered per marketplace and currency, else the published default; null when no rate is known for what was earned' }),
  ),
  electricity_usd: Nullable(
    Money({
      description: "The server's tariff (else the fleet's) × measured GPU power × hours; null when no tariff or no power measurement exists for any day",
    }),
  ),
  gpuhq_charges_usd: Money({ description: "gpuhq's own hourly charges for the server (the charge journal)" }),
  margin_usd: Money({ description: 'earned − cut − electricity − charges; may be negative' }),
  estimate: Type.Boolean({ description: 'true when an input is missing: the figure leaves it out, it is not zero' }),
  missing: Type.Array(Type.String({ maxLength: 128 }), { description: 'What is missing or defaulted' }),
}

export const MarginReport = Type.Object({
  days: Type.Integer(),
  from_day: Type.String({ format: 'date' }),
  to_day: Type.String({ format: 'date' }),
  fleet: Type.Object(Figures),
  servers: Type.Array(Type.Object({ server_id: Type.String({ format: 'uuid' }), name: Type.String(), gpu_model: Nullable(Type.String()), ...Figures })),
  gpu_models: Type.Array(Type.Object({ gpu_model: Type.String(), servers: Type.Integer({ minimum: 1 }), ...Figures })),
})
