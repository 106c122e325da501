import { Type, type TProperties } from '@sinclair/typebox'
import { t } from 'elysia'
import { Literals, Money, Nullable, Timestamp, Uuid } from '../../platform/schemas'
import { MarginReport as CostsMarginReport } from '../costs'
import { MarketplaceId } from '../marketplaces'

const DateParam = (description: string) => t.String({ format: 'date', maxLength: 10, description })
const Day = (description?: string) => Type.String({ format: 'date', ...(description ? { description } : {}) })

const RangeParams = {
  from: t.Optional(DateParam('First day of the range, included (YYYY-MM-DD, 2000..2099). Default: 6 days before `to`')),
  to: t.Optional(DateParam('Last day of the range, included. Default: today (in the zone the report counts days in)')),
  group_by: t.Optional(
    Literals(['day', 'week', 'month'] as const, { description: 'Periods of the answer: days (default), ISO weeks (Monday to Sunday) or months' }),
  ),
  format: t.Optional(Literals(['json', 'csv'] as const, { description: 'json (default) or csv; without it, Accept: text/csv asks for CSV' })),
}

export const MarginQuery = t.Object({
  ...RangeParams,
  days: t.Optional(t.Integer({ minimum: 1, maximum: 90, description: 'Margin only: the last 1..90 UTC days, today included (instead of from/to)' })),
})

const RangeFields = {
  from: Day('First day, included'),
  to: Day('Last day, included'),
  days: Type.Integer({ minimum: 1, maximum: 366, description: 'Days in the range' }),
  group_by: Literals(['day', 'week', 'month'] as const),
  timezone: Type.String({
    description: "The zone the days are counted in: UTC for reports built from the marketplaces' accrual, the account's zone for spend",
  }),
  from_at: Timestamp({ description: 'The first instant of the range' }),
  to_at: Timestamp({ description: 'The instant after the range (exclusive)' }),
}
const PeriodFields = {
  period: Type.String({ description: 'YYYY-MM-DD for a day, the Monday YYYY-MM-DD for a week, YYYY-MM for a month' }),
  from: Day('First day of the period inside the range'),
  to: Day('Last day of the period inside the range'),
  from_at: Timestamp(),
  to_at: Timestamp({ description: 'Exclusive' }),
}
const withPeriod = <P extends TProperties>(p: P) => Type.Object({ ...PeriodFields, ...p })

const Share = (description: string) => Nullable(Type.Number({ minimum: 0, maximum: 1, description }))
const UtilisationFigures = {
  tracked_seconds: Type.Integer({ minimum: 0, description: 'Time under management (enrolled, not decommissioned) in the period, up to now' }),
  online_seconds: Type.Integer({ minimum: 0, description: 'Of it, time online (presence from the agent session)' }),
  suspect_seconds: Type.Integer({ minimum: 0, description: 'Of it, time suspect (heartbeats late, not yet offline); not counted as up' }),
  uptime_share: Share('online ÷ tracked, 4 decimals; null when nothing was tracked'),
  rented_seconds: Type.Integer({ minimum: 0, description: "Time deals ran, from the marketplaces' accrual (GET /marketplaces/earnings' accrued_seconds)" }),
  rented_share: Share('rented ÷ tracked, at most 1, 4 decimals; null when nothing was tracked'),
  gpu_utilisation_pct: Nullable(
    Type.Number({ minimum: 0, description: 'Average GPU utilisation over the GPU-hours measured (hourly rollups), 1 decimal; null: none' }),
  ),
}
export const UtilisationReport = Type.Object({
  report: Type.Literal('utilisation'),
  ...RangeFields,
  fleet: Type.Object(UtilisationFigures),
  periods: Type.Array(withPeriod(UtilisationFigures), { description: 'The fleet per period' }),
  servers: Type.Array(
    Type.Object({ server_id: Uuid(), name: Type.String(), gpu_model: Nullable(Type.String()), gpu_count: Type.Integer({ minimum: 0 }), ...UtilisationFigures }),
    { description: 'Each server over the whole range (per period in the CSV)' },
  ),
})

const EarningsFigures = {
  earned_usd: Money({ description: "Accrued from running deals, before the platforms' cut: the sum of earn_usd_accrued" }),
  platform_reported_usd: Nullable(
    Money({ description: "The platforms' own figures after their cut (earn_usd_day) where they reported one; null when none did (always on marketplace_b)" }),
  ),
  accrued_seconds: Type.Integer({ minimum: 0 }),
  accrual_gap_seconds: Type.Integer({ minimum: 0, description: 'Time the sync was silent past its cap while deals ran: earned_usd is understated by it' }),
}
const ByMarketplace = Type.Object({ marketplace: MarketplaceId, servers: Type.Integer({ minimum: 0 }), ...EarningsFigures })
const ByGpuModel = Type.Object({ gpu_model: Type.String(), servers: Type.Integer({ minimum: 1 }), ...EarningsFigures })
export const EarningsReport = Type.Object({
  report: Type.Literal('earnings'),
  ...RangeFields,
  total: Type.Object(EarningsFigures),
  periods: Type.Array(withPeriod({ ...EarningsFigures, by_marketplace: Type.Array(ByMarketplace), by_gpu_model: Type.Array(ByGpuModel) })),
  by_marketplace: Type.Array(ByMarketplace),
  by_gpu_model: Type.Array(ByGpuModel),
  servers: Type.Array(Type.Object({ server_id: Uuid(), name: Type.String(), gpu_model: Nullable(Type.String()), ...EarningsFigures })),
  total_label: Type.String(),
})

const SpendFigures = {
  charges_usd: Money({ description: "gpuhq's hourly charges booked for hours starting in the period" }),
  adjustments_usd: Money({ description: 'Operator adjustments as spend: a debit adds, a credit subtracts' }),
  spend_usd: Money({ description: 'charges + adjustments: what the spend tiles of GET /billing count' }),
  topups_usd: Money({ description: 'Top-ups credited (reversals subtracted); not spend' }),
  charged_hours: Type.Integer({ minimum: 0, description: 'Hours charged (charge rows)' }),
  server_hours: Type.Integer({ minimum: 0, description: 'Server-hours those charges billed' }),
}
export const SpendReport = Type.Object({
  report: Type.Literal('spend'),
  ...RangeFields,
  total: Type.Object(SpendFigures),
  periods: Type.Array(withPeriod(SpendFigures)),
  servers: Type.Array(
    Type.Object({
      server_id: Uuid(),
      name: Type.String(),
      server_hours: Type.Integer({ minimum: 0 }),
      charges_usd: Money({ description: 'Each hour split over its servers as the per-server CSV splits it' }),
    }),
  ),
})

export const MarginReport = Type.Object({
  report: Type.Literal('margin'),
  ...CostsMarginReport.properties,
  ...RangeFields,
  periods: Type.Array(withPeriod(CostsMarginReport.properties.fleet.properties), { description: 'The fleet per period, each computed over its own days' }),
})
