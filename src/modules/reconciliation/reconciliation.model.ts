import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Literals, Money, Nullable, PageOf, PageQuery, Timestamp, Uuid } from '../../platform/schemas'
import { MarketplaceId } from '../marketplaces'

/** Payouts reconciled (docs/marketplaces.md "Payouts reconciled"). */

const DateParam = (description: string) => t.String({ format: 'date', maxLength: 10, description })

export const ReconciliationQuery = t.Object({
  from: t.Optional(DateParam('First UTC day, included (YYYY-MM-DD). Default: 6 days before `to`')),
  to: t.Optional(DateParam('Last UTC day, included. Default: today (UTC)')),
  days: t.Optional(t.Integer({ minimum: 1, maximum: 90, description: 'The last 1..90 UTC days, today included (instead of from/to)' })),
  marketplace: t.Optional(MarketplaceId),
  ...PageQuery,
})

const CutSource = Literals(['entered', 'published_default', 'unknown'] as const, {
  description:
    "Where the commission comes from: the rate entered in the cost basis (`entered`), else the platform's published default (`published_default`), else not known (`unknown`: enter it in the cost basis)",
})

const Row = Type.Object({
  day: Type.String({ format: 'date', description: 'UTC day' }),
  server_id: Uuid(),
  server_name: Type.String(),
  marketplace: MarketplaceId,
  closed: Type.Boolean({ description: 'The day is over (UTC). Only a closed day is flagged: the platform is still counting today' }),
  accrued_usd: Money({ description: 'gpuhq\'s accrual: rented hours × price, before the platform\'s cut (docs/earnings.md "Accrual")' }),
  accrual_gap_seconds: Type.Integer({ description: 'Time deals ran while the sync was silent: not in the accrual, which is understated by it' }),
  commission_percent: Nullable(Type.String(), { description: "The platform's cut applied (the effective one when currencies differ); null when not known" }),
  commission_source: CutSource,
  commission_usd: Nullable(Money(), { description: 'accrued_usd × commission, per deal currency; null when not known' }),
  expected_usd: Nullable(Money(), { description: 'What the platform should report: accrued_usd − commission_usd; null when the commission is not known' }),
  platform_usd: Nullable(Money(), {
    description:
      "The platform's own figure after its cut (marketplace_a's machine-earnings: GPU, storage and bandwidth); null when it said nothing, always on marketplace_b (Clore has no earnings report)",
  }),
  difference_usd: Nullable(Money(), { description: 'platform_usd − accrued_usd: the whole difference, signed' }),
  unexplained_usd: Nullable(Money(), {
    description: 'platform_usd − expected_usd: what the commission does not explain (negative: the platform paid less); null when either is null',
  }),
  flagged: Type.Boolean({
    description: 'A closed day where the platform paid less than expected by more than the threshold (−unexplained_usd > gap_threshold_usd)',
  }),
})

const Totals = Type.Object(
  {
    rows: Type.Integer(),
    accrued_usd: Money(),
    commission_usd: Nullable(Money(), { description: 'Null when any row with accrual has an unknown commission' }),
    expected_usd: Nullable(Money()),
    reported_rows: Type.Integer({ description: 'Rows the platform reported a figure for' }),
    reported_expected_usd: Nullable(Money(), { description: 'expected_usd summed over the reported rows only (like for like)' }),
    platform_usd: Money({ description: "The platform's figures summed" }),
    unexplained_usd: Nullable(Money(), { description: 'platform_usd − reported_expected_usd' }),
    flagged_rows: Type.Integer(),
  },
  { description: 'The whole window (every page), after the marketplace filter' },
)

const Payout = Type.Object({
  marketplace: MarketplaceId,
  id: Type.String({ description: "The platform's id of the entry" }),
  type: Type.String({ description: 'As the platform names it: credit, transfer, payout, refund, reserved (marketplace_a)' }),
  day: Type.String({ format: 'date' }),
  starts_at: Timestamp(),
  ends_at: Nullable(Timestamp()),
  amount_usd: Money({ description: 'Signed, as the platform gave it' }),
  description: Type.String(),
})

const Wallet = Type.Object({
  marketplace: MarketplaceId,
  currency: Type.String({ description: 'The coin as the platform spells it (bitcoin, CLORE-Blockchain, USD-Blockchain)' }),
  day: Type.String({ format: 'date' }),
  balance: Type.String({ description: 'Coin amount (decimal text, up to 12 decimals), the last reading of the day' }),
  usd: Nullable(Money(), { description: 'At the rate the sync last carried; null without one' }),
  change: Nullable(Type.String({ description: 'Balance minus the previous reading in the window (coin); null for the first' })),
  observed_at: Timestamp(),
})

export const Reconciliation = PageOf(
  Row,
  { maxItems: 200 },
  {
    from: Type.String({ format: 'date' }),
    to: Type.String({ format: 'date' }),
    marketplace: Nullable(MarketplaceId),
    gap_threshold_usd: Money({ description: "The owner's threshold (GET/PUT /reconciliation/settings)" }),
    totals: Totals,
    payouts: Type.Array(Payout, {
      maxItems: 500,
      description:
        "The platform's invoice / payout history with a start in the window (marketplace_a's /api/v1/invoices, read hourly); account-wide, never per machine",
    }),
    wallets: Type.Array(Wallet, {
      maxItems: 500,
      description: "The account's wallet balances per coin and day in the window (marketplace_b's /v1/wallets, read hourly)",
    }),
    total_label: Type.String(),
  },
)

export const Settings = Type.Object({
  gap_threshold_usd: Money({
    description: 'A closed day and machine whose unexplained shortfall passes this is flagged and opens a payout_gap alert. Default 1.00',
  }),
  default: Type.Boolean({ description: 'True while the owner has set nothing (the default applies)' }),
  version: Type.Integer({ description: 'The ETag' }),
})

export const SettingsPut = Type.Object(
  {
    gap_threshold_usd: Money({ description: 'USD per machine and day, 0 to 1,000,000 (0: flag any shortfall)' }),
  },
  { additionalProperties: false },
)
