/**
 * The one interface both marketplace adapters speak (docs/marketplaces.md). An adapter turns one
 * platform's host API into the normalised shapes of the link resource: the `remote` projection
 * (every field nullable: a field the platform did not send is null, never zero; per-GB prices
 * become per-TB), the `marketplace_b` object for marketplace_b, and the facts a candidate is ranked
 * by. It knows nothing of tenants, links or HTTP answers of gpuhq: the marketplaces service does.
 */

import type { MarketplaceId } from '../../../platform/marketplace-id'

export type { MarketplaceId }

/** A running order on a machine, as the link's `remote.rentals` shows it (money as decimal strings). */
export type RemoteRental = {
  kind: string | null
  currency: string | null
  /** In the order's own currency, per day. */
  price_day: string | null
  gpu_count: number | null
  /** RFC 3339 or null. */
  ends_at: string | null
}

/** The normalised projection of a machine (the spec's `remote`). */
export type RemoteProjection = {
  listed: boolean | null
  verification: string | null
  hostname: string | null
  /** A fraction, unrounded (0.7745 is 77.45 percent). */
  reliability: number | null
  rentals_running: number | null
  gpu_name: string | null
  gpu_count: number | null
  /** One character per card as the platform prints it. */
  gpu_occupancy: string | null
  /** Normalised model key (the same key as the market summary). */
  gpu_model: string | null
  price_gpu_hour: string | null
  min_bid_hour: string | null
  price_storage_gb_month: string | null
  /** Per terabyte, converted from the platform's per-gigabyte price (× 1000). */
  price_inet_up_tb: string | null
  price_inet_down_tb: string | null
  min_gpu_count: number | null
  discount_max: number | null
  end_date: string | null
  ask_duration_seconds: number | null
  earnings_day: string | null
  earnings_hour: string | null
  gpu_lanes: number | null
  pcie_bandwidth_gbs: number | null
  inet_up_mbps: number | null
  inet_down_mbps: number | null
  direct_port_count: number | null
  /** The newest CUDA the platform says the machine's driver runs, as text ("12.4"; Vast's `cuda_max_good`, Clore's `cuda_version`). */
  cuda_version: string | null
  /** The driver version the platform reports (Vast's `driver_version`). */
  driver_version: string | null
  /** All the machine's VRAM, MiB (Vast's `gpu_total_ram`; Clore: `specs.gpuram` GB × cards). */
  gpu_total_ram_mb: number | null
  /** System memory, MiB (Vast's `cpu_ram`; Clore: `specs.ram` GB × 1024). */
  cpu_ram_mb: number | null
  /** Logical CPUs (Vast's `cpu_cores`; Clore: the threads of `specs.cpus` "cores/threads"). */
  cpu_cores: number | null
  maintenance_announced: boolean
  maintenance_starts_at: string | null
  maintenance_hours: number | null
  error: string | null
  /** Empty when idle, and always on marketplace_a (no per-order breakdown there). */
  rentals: RemoteRental[]
}

export type CoinPrice = { on_demand: string | null; spot: string | null }
export type SpotBid = { offer_id: number | null; bid: string; currency: string | null; active: boolean; mine: boolean }

/** marketplace_b's own fields of a link (the spec's `marketplace_b` object). */
export type MarketplaceBProjection = {
  max_rental_hours: number | null
  partial_rental: boolean | null
  vpn: boolean | null
  partner: boolean | null
  overclock: boolean | null
  update_channel: string | null
  backend_version: number | null
  target_backend_version: number | null
  driver_status: string | null
  driver_version: string | null
  kernel: string | null
  max_fair_price_day: number | null
  coins: string[] | null
  fixed_coins: string[] | null
  coin_prices: Record<string, CoinPrice> | null
  spot: { bids: SpotBid[]; rates_usd_per_coin: Record<string, string>; best_bid_usd: string | null } | null
}

/** What a candidate is ranked by (compared with the agent's registration facts). */
export type MachineFacts = {
  hostname: string | null
  public_ip: string | null
  gpu_model: string | null
  gpu_count: number | null
  disk_gb: number | null
  /** How many ports the machine's direct range holds (the bounds are not compared). */
  port_range_size: number | null
}

export type RemoteMachine = {
  /** The platform's machine id, as text (max 128). */
  externalMachineId: string
  remote: RemoteProjection
  /** Present on marketplace_b only. */
  marketplaceB: MarketplaceBProjection | null
  facts: MachineFacts
  /** How many renter reports the platform counts on the machine (Vast `num_reports`); null when it does not say. */
  reportCount: number | null
}

/**
 * One renter's report about a machine, as Vast's `GET /machines/{id}/reports/` lists it (its
 * OpenAPI: "the 20 most recent problem reports", each `{problem, message, created_at}`). The
 * platform gives a report no id; null for a field it did not send as expected.
 */
export type RenterReportRead = { problem: string | null; message: string | null; reportedAtUs: number | null }

/** One entry of the platform's invoice / payout history (Vast `GET /api/v1/invoices`), USD. */
export type PayoutRead = {
  /** The platform's own id (`metadata.invoice_id`), else one built from the entry's start, type and amount. */
  externalId: string
  /** credit, transfer, payout, refund, reserved (Vast's `type`), as the platform spells it. */
  type: string
  /** Start of the entry (unix seconds) and end (null: none given). */
  startS: number
  endS: number | null
  /** Signed USD money text, as the platform gave it (exactly, micro-dollars). */
  amountUsd: string
  description: string
}

/** One wallet of the account (Clore `GET /v1/wallets`): the coin as the platform spells it and its balance (coin text, up to 12 decimals). */
export type WalletRead = { currency: string; balance: string }

/** Who the key belongs to, as the platform says. */
export type AccountIdentity = {
  /** How the platform identifies the owner (an account id or name). */
  owner: string
  /** marketplace_b's holding-programme amount in USD; null when unread, always null on marketplace_a. */
  holdingUsd: string | null
}

/**
 * The three outcomes kept apart everywhere: the platform rejected the key (the only way a stored
 * connection becomes invalid_key); the key lacks a permission group or needs 2FA (status unchanged);
 * the platform could not be reached, answered 5xx, kept rate-limiting past the retries, or is not
 * configured (retriable, status unchanged). A write adds a fourth: the platform understood the key
 * but refused the request itself (`refused`: a bad value, an unknown machine), with its reason.
 */
export type MarketplaceFailure = 'rejected_key' | 'missing_permission' | 'unavailable' | 'refused'

export class MarketplaceError extends Error {
  constructor(
    readonly marketplace: MarketplaceId,
    readonly failure: MarketplaceFailure,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message)
    this.name = 'MarketplaceError'
  }
}

/** One call to a platform, for the operations log: never the key. */
export type MarketplaceCall = {
  marketplace: MarketplaceId
  /** What was asked, e.g. "machines.list" or "account.verify". */
  operation: string
  method: string
  /** The path without the query string (the legacy key parameter never reaches the log). */
  path: string
  startedAtUs: number
  latencyMs: number
  /** HTTP status, or null when no answer came. */
  status: number | null
  outcome: 'ok' | MarketplaceFailure | 'retried'
}

/** Vast's `create_asks` body (reference 1.3): USD per GPU-hour, per GB-month, per GB; end_date in unix seconds. */
export type VastAsk = {
  machine: number
  price_gpu: number
  price_min_bid?: number
  price_disk?: number
  price_inetu?: number
  price_inetd?: number
  /** Never null: Vast does int(min_chunk) and answers 400 to a null. */
  min_chunk: number
  end_date?: number
  credit_discount_max?: number
}

/** Clore's `set_server_settings` body (reference 2.3): per-day, per-server prices per coin. */
export type CloreSettings = { name: string; availability: boolean } & Record<string, string | number | boolean | Record<string, unknown>>

/** An offer as each platform takes it; the service builds it from the API's `remote` names. */
export type OfferWrite = { marketplace: 'marketplace_a'; ask: VastAsk } | { marketplace: 'marketplace_b'; settings: CloreSettings }

/** How a machine is addressed for a write: Vast by numeric id, Clore by server name. */
export type MachineRef = { externalMachineId: string; name: string | null }

/**
 * Vast's default (idle) job as `create_bids` takes it (host-operations.md section 2): the host's own
 * container run at `price_gpu` USD per GPU-hour while no renter holds the GPUs; traffic per GB.
 */
type IdleJobWrite = { image: string; args: string; priceGpu: number; priceInetu: number | null; priceInetd: number | null }

/** A maintenance window as Vast's `dnotify` takes it. */
type MaintenanceWindow = { startsAtS: number; hours: number; category: string; reason: string | null }

/** One asking price on a platform's public market, for market statistics. */
export type MarketOffer = {
  /** The platform's name for the GPU and the normalised model key (gpu-model.ts). */
  gpuName: string | null
  gpuModel: string | null
  gpuCount: number | null
  /** USD per GPU-hour (marketplace_a) or null when the platform prices otherwise. */
  priceGpuHourMicros: number | null
  /** Whether a renter could take it now. */
  rentable: boolean | null
  /** The platform's id of the machine behind the offer (to tell the tenant's own offers apart). */
  machineId: string | null
}

export interface MarketplaceAdapter {
  readonly marketplace: MarketplaceId
  /** Checks the key and says whose it is; throws MarketplaceError. */
  verifyKey(apiKey: string): Promise<AccountIdentity>
  /** Every machine the key's owner has on the platform; throws MarketplaceError. */
  listMachines(apiKey: string): Promise<RemoteMachine[]>
  /**
   * The holding-programme amount in USD for the sync, given the machines just listed; null when
   * unread (a failed read is not a failure of the sync) and always null on marketplace_a.
   * Throws MarketplaceError only for a rejected key.
   */
  readHolding(apiKey: string, machines: RemoteMachine[]): Promise<string | null>
  /** Publishes or updates the machine's offer; answers how many running contracts the platform says it extended (null: not told). */
  publishOffer(apiKey: string, offer: OfferWrite): Promise<{ extendedContracts: number | null }>
  /** Takes the machine's offer off the market. */
  withdrawOffer(apiKey: string, machine: MachineRef): Promise<void>
  /** Announces a maintenance window to renters; null on a platform without a maintenance API. */
  readonly maintenance: {
    announce(apiKey: string, machine: MachineRef, window: MaintenanceWindow): Promise<void>
    cancel(apiKey: string, machine: MachineRef): Promise<void>
  } | null
  /**
   * The machine's idle job (Vast's default job: `PUT /machines/create_bids/`, removed by
   * `DELETE /machines/{id}/defjob/`); null on a platform whose API cannot set one (marketplace_b).
   */
  readonly idleJob: {
    set(apiKey: string, machine: MachineRef, job: IdleJobWrite): Promise<void>
    remove(apiKey: string, machine: MachineRef): Promise<void>
  } | null
  /**
   * The platform's public asking prices. `apiKey` is used where the platform needs one to read
   * its public market (marketplace_b); marketplace_a's offer search is anonymous.
   */
  listMarket(apiKey: string | null): Promise<MarketOffer[]>
  /**
   * The platform's own earnings per machine for one UTC day (days since the epoch), after its cut,
   * USD money text by machine id; a machine the report does not name is absent. Null on a platform
   * with no earnings report (marketplace_b).
   */
  readonly dayEarnings: ((apiKey: string, day: number) => Promise<Map<string, string>>) | null
  /** The renter reports on one machine, newest first as the platform lists them; null on a platform without them (marketplace_b). */
  readonly machineReports: ((apiKey: string, machine: MachineRef) => Promise<RenterReportRead[]>) | null
  /**
   * The account's invoice / payout history with a start in [fromS, toS] (unix seconds), every page;
   * null on a platform without one (marketplace_b). Needs the key's billing permission.
   */
  readonly payouts: ((apiKey: string, fromS: number, toS: number) => Promise<PayoutRead[]>) | null
  /** The account's wallet balances per coin; null on a platform without wallets (marketplace_a pays out in USD). */
  readonly wallets: ((apiKey: string) => Promise<WalletRead[]>) | null
}

export type AdapterOptions = {
  /** The platform's origin (MARKETPLACE_A_API_URL / MARKETPLACE_B_API_URL); the adapter adds its prefix. */
  baseUrl: string
  /** Microseconds since the epoch (the service clock). */
  nowUs: () => number
  /** Per request; default 15 s. */
  timeoutMs?: number
  /** Multiplies the platform's published spacing between calls (tests make it small). */
  paceScale?: number
  /** Retries of a rate-limited or failed call before `unavailable`; default 3. */
  retries?: number
  /** Every call, for the operations log. */
  onCall?: (call: MarketplaceCall) => void
  /**
   * Awaited before each request leaves the process: the service's durability barrier, so the
   * platform never acts on a write a power loss could still undo (db/durability.ts).
   */
  beforeCall?: () => Promise<void>
}
