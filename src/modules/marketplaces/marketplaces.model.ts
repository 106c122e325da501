import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Literals, Money, Nullable, PageOf, Timestamp, Uuid } from '../../platform/schemas'
import { MARKETPLACES, MarketplaceId } from '../../platform/marketplace-id'

export const MarketplaceParam = t.Object({ marketplace: MarketplaceId })

export const ConnectBody = Type.Object(
  {
    api_key: Type.String({
      minLength: 1,
      maxLength: 512,
      description: 'The API key of your account at the marketplace. Verified before it is stored; never shown again.',
    }),
  },
  { additionalProperties: false },
)

export const Connection = Type.Object({
  marketplace: MarketplaceId,
  status: Literals(['connected', 'invalid_key'] as const),
  owner: Type.String({ description: 'How the marketplace identifies the account owner', maxLength: 256 }),
  key_hash: Type.String({ description: 'A keyed hash of the stored key: equal for the same key, different for a new one' }),
  connected_at: Timestamp(),
  updated_at: Timestamp(),
  last_success_at: Nullable(Timestamp()),
  last_failure_at: Nullable(Timestamp()),
  last_failure: Nullable(Type.String({ maxLength: 512, description: 'Why the last sync failed; kept until the next success' })),
  holding_usd: Nullable(Money({ description: "marketplace_b's holding-programme amount; null when unread (always on marketplace_a)" })),
})

export const ConnectionList = Type.Object({ items: Type.Array(Connection, { maxItems: MARKETPLACES.length }) })

const Operation = Type.Object({
  id: Uuid(),
  marketplace: MarketplaceId,
  server_id: Nullable(Uuid()),
  operation: Type.String({ maxLength: 64 }),
  method: Type.String({ maxLength: 8 }),
  path: Type.String({ maxLength: 512, description: 'The platform path called, without its query string' }),
  status: Nullable(Type.Integer({ description: 'HTTP status the platform answered; null when no answer came' })),
  outcome: Literals(['ok', 'rejected_key', 'missing_permission', 'unavailable', 'refused', 'retried'] as const),
  latency_ms: Type.Integer({ minimum: 0 }),
  reason: Nullable(
    Type.String({
      maxLength: 256,
      description: 'Why gpuhq made the call on its own (e.g. keep-on re-publishing an offer the platform showed unlisted); null when asked',
    }),
  ),
  actor: Type.Object({ kind: Type.String(), id: Nullable(Type.String()) }),
  at: Timestamp(),
})

export const OperationPage = PageOf(Operation)

export const LinkCreate = Type.Object(
  {
    server_id: Uuid({ description: 'A server of yours' }),
    marketplace: MarketplaceId,
    external_machine_id: Type.String({ minLength: 1, maxLength: 128, description: "The machine's id at the marketplace, as its listing shows it" }),
  },
  { additionalProperties: false },
)

export const LinkParams = t.Object({ server_id: t.String({ format: 'uuid' }), marketplace: MarketplaceId })

const NStr = (maxLength: number, description?: string) => Nullable(Type.String({ maxLength, ...(description ? { description } : {}) }))
const NInt = (description?: string) => Nullable(Type.Integer(description ? { description } : {}))
const NNum = (description?: string) => Nullable(Type.Number(description ? { description } : {}))
const NBool = () => Nullable(Type.Boolean())
const NMoney = (description?: string) => Nullable(Money(description ? { description } : {}))

const Rental = Type.Object({
  kind: NStr(32),
  currency: NStr(32),
  price_day: Nullable(
    Type.String({ maxLength: 64, description: "Decimal string, per day, in the order's own currency (a coin may carry more than 6 fraction digits)" }),
  ),
  gpu_count: NInt(),
  ends_at: Nullable(Timestamp()),
})

const Remote = Type.Object(
  {
    listed: NBool(),
    verification: NStr(32),
    hostname: NStr(256),
    reliability: NNum('A fraction, unrounded: 0.7745 is 77.45 percent'),
    rentals_running: NInt(),
    gpu_name: NStr(128, "The platform's name"),
    gpu_count: NInt(),
    gpu_occupancy: NStr(64, 'One character per card as the platform prints it; a length other than the card count means not understood'),
    gpu_model: NStr(128, 'Normalised model key (the same key as the market summary)'),
    price_gpu_hour: NMoney(),
    min_bid_hour: NMoney(),
    price_storage_gb_month: NMoney(),
    price_inet_up_tb: NMoney('Per terabyte (the platform prices per gigabyte)'),
    price_inet_down_tb: NMoney('Per terabyte (the platform prices per gigabyte)'),
    min_gpu_count: NInt(),
    discount_max: NNum(),
    end_date: NStr(64, 'For a rolling offer: now plus the duration'),
    ask_duration_seconds: NNum('The rolling window; null for a fixed end date'),
    earnings_day: NMoney(),
    earnings_hour: NMoney(),
    gpu_lanes: NInt(),
    pcie_bandwidth_gbs: NNum(),
    inet_up_mbps: NNum(),
    inet_down_mbps: NNum(),
    direct_port_count: NInt(),
    cuda_version: NStr(16, 'The newest CUDA version the platform says the driver runs ("12.4"); readiness checks it (docs/readiness.md)'),
    driver_version: NStr(64, 'The NVIDIA driver version the platform reports'),
    gpu_total_ram_mb: NInt('All the VRAM of the machine, MiB, as the platform measured it'),
    cpu_ram_mb: NInt('System memory, MiB, as the platform measured it'),
    cpu_cores: NInt('Logical CPUs, as the platform counted them'),
    maintenance_announced: Type.Boolean(),
    maintenance_starts_at: Nullable(Timestamp()),
    maintenance_hours: NNum(),
    error: NStr(512, 'The platform complaint; null means none'),
    rentals: Type.Array(Rental, { description: 'Running orders; empty when idle, and always on marketplace_a (no per-order breakdown)' }),
  },
  { description: 'The normalised marketplace projection: every field nullable, a field the platform did not send is null (never zero)' },
)

const MarketplaceB = Type.Object(
  {
    max_rental_hours: NInt(),
    partial_rental: NBool(),
    vpn: NBool(),
    partner: NBool(),
    overclock: NBool(),
    update_channel: NStr(32),
    backend_version: NInt(),
    target_backend_version: NInt(),
    driver_status: NStr(32),
    driver_version: NStr(64),
    kernel: NStr(128),
    max_fair_price_day: NNum(),
    coins: Nullable(Type.Array(Type.String(), { description: 'Accepted currencies' })),
    fixed_coins: Nullable(Type.Array(Type.String(), { description: 'Currencies whose price is pinned in the coin itself' })),
    coin_prices: Nullable(Type.Record(Type.String(), Type.Object({ on_demand: Nullable(Type.String()), spot: Nullable(Type.String()) }))),
    spot: Nullable(
      Type.Object({
        bids: Type.Array(
          Type.Object({
            offer_id: NInt(),
            bid: Type.String({ maxLength: 64, description: "Decimal string in the bid's own currency" }),
            currency: NStr(32),
            active: Type.Boolean(),
            mine: Type.Boolean(),
          }),
          { description: 'Empty when nobody is bidding' },
        ),
        rates_usd_per_coin: Type.Record(Type.String(), Money({ description: 'USD per coin' })),
        best_bid_usd: NMoney(),
      }),
    ),
  },
  { description: "marketplace_b's own fields (present on marketplace_b links only)" },
)

/** The link's listing settings (docs/marketplaces.md "Rolling end dates", "Idle jobs"). */
const IdleJob = Type.Object(
  {
    image: Type.String({ maxLength: 512, description: 'The container image run while no renter holds the GPUs' }),
    args: Type.String({ maxLength: 2048, description: 'Arguments passed to the image; empty for none' }),
    price_gpu_hour: Money({ description: 'USD per GPU-hour the idle job pays the host' }),
    price_inet_up_tb: NMoney('USD per TB uploaded (sent to Vast per GB); null: not sent'),
    price_inet_down_tb: NMoney('USD per TB downloaded (sent to Vast per GB); null: not sent'),
    set_at: Timestamp({ description: 'When gpuhq set it on the platform' }),
  },
  { description: "The idle job gpuhq set on the machine (Vast's default job); null when none was set through gpuhq or it was removed" },
)

const LinkListing = Type.Object(
  {
    end_date_days: Nullable(
      Type.Integer({
        description: "Rolling end date: the sync keeps the offer's end date at least this many days ahead; null when off (always on marketplace_b)",
      }),
    ),
    end_date_extended_to: Nullable(Timestamp({ description: 'The end date gpuhq last set on its own; null before the first extension' })),
    end_date_extended_at: Nullable(Timestamp({ description: 'When it did' })),
    idle_job: Nullable(IdleJob),
  },
  { description: 'Listing settings gpuhq applies to the machine (docs/marketplaces.md "Rolling end dates", "Idle jobs")' },
)

export const Link = Type.Object({
  server_id: Uuid(),
  marketplace: MarketplaceId,
  external_machine_id: Type.String({ maxLength: 128 }),
  bind_mode: Literals(['manual', 'agent'] as const, { description: '`agent` is produced by nothing yet' }),
  state: Literals(['linked', 'stale', 'conflict'] as const, {
    description:
      'stale: the machine stopped appearing in the marketplace listing (the link is kept); conflict: another server of yours is linked to the same machine',
  }),
  linked_at: Timestamp(),
  last_seen_at: Nullable(Timestamp()),
  remote: Remote,
  marketplace_b: Type.Optional(MarketplaceB),
  electricity_usd_per_gpu_hour: NMoney(
    "Measured electricity cost of one GPU-hour over the last 7 days (the server's tariff × its average GPU power ÷ its card count); null when not computable, and always in single-link answers",
  ),
  listing: LinkListing,
})

export const LinkList = Type.Object({ links: Type.Array(Link, { maxItems: 512 }) })

/** A coin amount as Clore takes it (per day, per server): up to 12 fraction digits, never a JSON number. */
const CoinAmount = Type.String({
  pattern: '^(0|[1-9][0-9]{0,11})(\\.[0-9]{1,12})?$',
  maxLength: 25,
  description: 'Decimal string in the coin, e.g. "0.00010337"',
})

/**
 * PUT /marketplaces/links/{server_id}/{marketplace}/offer: the `remote` projection's names
 * (decisions.md "Request bodies"). marketplace_a takes the USD fields; marketplace_b takes
 * `coin_prices` and `max_rental_hours`. A field the other platform has no use for → 422.
 */
export const OfferBody = Type.Object(
  {
    price_gpu_hour: Type.Optional(
      Money({ description: 'marketplace_a: USD per GPU-hour on demand (required there); above 0 (422 too_small) and at most 1000000000 (422 too_large)' }),
    ),
    min_bid_hour: Type.Optional(Money({ description: 'marketplace_a: the lowest interruptible bid, USD per GPU-hour; above 0 (422 too_small)' })),
    price_storage_gb_month: Type.Optional(Money({ description: 'marketplace_a: USD per GB-month of disk' })),
    price_inet_up_tb: Type.Optional(Money({ description: 'marketplace_a: USD per TB uploaded (sent to Vast per GB, ÷ 1000)' })),
    price_inet_down_tb: Type.Optional(Money({ description: 'marketplace_a: USD per TB downloaded (sent to Vast per GB, ÷ 1000)' })),
    min_gpu_count: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 64,
        description: 'marketplace_a: the smallest rentable GPU count (min_chunk); keeps the current one, or 1, when omitted',
      }),
    ),
    end_date: Type.Optional(Timestamp({ description: 'marketplace_a: the offer ends then; Vast also extends running contracts to it' })),
    discount_max: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'marketplace_a: the largest prepay discount, a fraction' })),
    coin_prices: Type.Optional(
      Type.Record(
        Type.String({ maxLength: 32 }),
        Type.Object({ on_demand: CoinAmount, spot: Type.Optional(Nullable(CoinAmount)) }, { additionalProperties: false }),
        {
          minProperties: 1,
          maxProperties: 3,
          description:
            'marketplace_b: per-day, per-server prices per coin (bitcoin, CLORE-Blockchain, USD-Blockchain): the on-demand price and the lowest spot price, each above zero (a zero lists the server for free: 422 too_small at /coin_prices/<coin>/on_demand or /spot). Each coin given is enabled. Required there.',
        },
      ),
    ),
    max_rental_hours: Type.Optional(Type.Integer({ minimum: 1, maximum: 3000, description: 'marketplace_b: the longest rental (mrl), in hours' })),
  },
  { additionalProperties: false, minProperties: 1 },
)

const Warning = Type.Object({
  code: Literals(['pending_price_increase', 'contracts_extended'] as const),
  message: Type.String({ maxLength: 512 }),
})

export const OfferAnswer = Type.Object({
  link: Link,
  warnings: Type.Array(Warning, {
    maxItems: 4,
    description:
      'What the platform implies and does not say: on marketplace_a, raising a price while renters run creates pending increases they must accept (their auto-extend stops at the old price); an end_date extends running contracts to it',
  }),
  extended_contracts: Nullable(Type.Integer({ description: 'How many running contracts marketplace_a says it extended to the end_date; null when not told' })),
})

export const MaintenanceBody = Type.Object(
  {
    starts_at: Timestamp({ description: 'In the future and at most a year ahead' }),
    hours: Type.Integer({ minimum: 1, maximum: 8760, description: 'Whole hours' }),
    category: Literals(['power', 'internet', 'disk', 'gpu', 'software', 'other'] as const),
    reason: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
  },
  { additionalProperties: false },
)

export const LinkAnswer = Type.Object({ link: Link })
