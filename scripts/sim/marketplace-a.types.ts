/**
 * Shapes of the marketplace_a (Vast.ai host API) simulator (docs/marketplaces.md "Simulators").
 * Machine fields are the platform's own JSON
 * names; a field left unset is absent from the JSON the simulator sends (never null, never 0).
 */

/** A maintenance window as Vast prints it inside `machine_maintenance`. */
export interface MaintenanceWindow {
  id: number
  machine_id: number
  start_time: number
  duration_hours: number
  maintenance_category: string
  maintenance_reason?: string
}

/** Every documented field of a `GET /machines/?owner=me` element except the id (section 1.2). */
export interface MachineFields {
  hostname?: string
  listed?: boolean
  verification?: 'verified' | 'unverified' | 'deverified'
  reliability2?: number
  gpu_name?: string
  num_gpus?: number
  gpu_ram?: number
  /** All the machine's VRAM, MiB (what the CLI's self-test reads as `gpu_total_ram`; host-operations.md section 1). */
  gpu_total_ram?: number | null
  total_flops?: number
  gpu_max_cur_temp?: number | null
  gpu_occupancy?: string
  listed_gpu_cost?: number | null
  min_bid_price?: number | null
  bid_gpu_cost?: number | null
  bid_image?: string | null
  bid_image_args?: string | null
  listed_storage_cost?: number | null
  listed_volume_cost?: number | null
  listed_inet_up_cost?: number | null
  listed_inet_down_cost?: number | null
  listed_min_gpu_count?: number | null
  credit_discount_max?: number | null
  end_date?: number | null
  start_date?: number | null
  duration?: number | null
  client_end_date?: number | null
  earn_hour?: number | null
  earn_day?: number | null
  pcie_bw?: number | null
  pci_gen?: number | null
  gpu_lanes?: number | null
  gpu_mem_bw?: number | null
  bw_nvlink?: number | null
  inet_up?: number | null
  inet_down?: number | null
  direct_port_count?: number | null
  machine_maintenance?: MaintenanceWindow[] | string | null
  error_description?: string | null
  vm_error_msg?: string | null
  num_reports?: number | null
  num_recent_reports?: number | null
  timeout?: number
  current_rentals_running?: number
  current_rentals_running_on_demand?: number
  current_rentals_resident?: number
  current_rentals_on_demand?: number
  clients?: unknown[]
  disk_space?: number | null
  max_disk_space?: number | null
  alloc_disk_space?: number | null
  avail_disk_space?: number | null
  disk_name?: string | null
  disk_bw?: number | null
  public_ipaddr?: string | null
  geolocation?: string | null
  driver_version?: string | null
  cuda_max_good?: number | null
  ubuntu_version?: string | null
  kernel_version?: string | null
  mobo_name?: string | null
  cpu_name?: string | null
  cpu_cores?: number | null
  cpu_ram?: number | null
  cpu_arch?: string | null
}

export type Permission = 'machine_read' | 'machine_write' | 'billing_read'

/** One API key of an owner. `label` is what the request log shows instead of the key. */
export interface SimKey {
  key: string
  label: string
  /** Permission groups; all three when omitted (an unscoped key). */
  permissions?: Permission[]
  /** Status for a missing permission group: the notes say "401 or 403"; 403 unless set. */
  deniedStatus?: 401 | 403
  /** true: every endpoint answers the 2FA 401; a list: only those endpoints do. */
  twoFactor?: boolean | Endpoint[]
  /** A 2FA session key that expired: 404 "Session expired. Please log in again." everywhere. */
  sessionExpired?: boolean
}

export interface SimOwner {
  id: number
  email: string
  username?: string
  credit?: number
  ssh_key?: string
  keys: SimKey[]
  /** `current` of the earnings answer; zeros when unset. */
  balance?: { balance: number; service_fee: number; total: number; credit: number }
}

/** A client contract on a machine. Vast shows hosts only counters, occupancy and client_end_date. */
export interface SimRental {
  kind: 'on_demand' | 'interruptible' | 'reserved'
  gpus: number
  running: boolean
  end_date?: number
}

export interface EarningRow {
  machine_id: number
  day: number
  gpu_earn: number
  sto_earn: number
  bwu_earn: number
  bwd_earn: number
}

export interface Invoice {
  start: number
  end: number
  type: 'credit' | 'transfer' | 'payout' | 'refund' | 'reserved'
  source: string
  description: string
  amount: number
  metadata: { invoice_id: number; service: string }
  items: unknown[]
}

export interface Report {
  problem: string
  message: string
  created_at: number
}

export type Mode = 'ok' | 'unreachable' | '5xx' | 'slow'

export interface LogEntry {
  method: string
  path: string
  /** The query string without `api_key`. */
  query: string
  endpoint: string
  /** The key's label, `anonymous` without a key, or `sha256:<12 hex>` for a key no owner holds. */
  identity: string
  status: number
  /** Milliseconds since the epoch when the request arrived. */
  time: number
  /**
   * What the caller sent, so a service test can assert the exact body a platform received: the
   * parsed JSON, the raw text when it is not JSON, null for a GET or an empty body. A field named
   * `api_key` (at any depth) and the caller's own key anywhere read "[redacted]": the log never holds a key.
   */
  body: unknown
}

/**
 * One offer of Vast's public search (`/api/v0/bundles/`): the fields of vast-cli's `Offer`
 * (vastai/data/offer.py) that the simulator knows how to fill, and `reliability2` as the machine list
 * spells it. Prices are $/hour for the whole
 * offer: `dph_base` is the machine's per-GPU price times `num_gpus`, `min_bid` its per-GPU minimum
 * bid times `num_gpus`. A field an offer does not have is absent from the answer.
 */
export interface OfferFields {
  /** The ask id, what a renter names when renting. */
  id: number
  ask_contract_id: number
  machine_id: number
  host_id: number
  gpu_name: string
  num_gpus: number
  dph_base: number
  dph_total: number
  min_bid: number
  rentable: boolean
  rented: boolean
  reliability2: number
  /** The same fraction under the name the CLI's self-test reads from the offer (host-operations.md section 1). */
  reliability: number
  verification: 'verified' | 'unverified' | 'deverified'
  geolocation: string
  gpu_ram: number
  disk_space: number
  /** $/GB/month. */
  storage_cost: number
  /** $/GB. */
  inet_up_cost: number
  inet_down_cost: number
  /** Mbps. */
  inet_up: number
  inet_down: number
  /** The self-test's fields (host-operations.md section 1), copied from the machine when it has them. */
  cuda_max_good: number
  direct_port_count: number
  pcie_bw: number
  gpu_total_ram: number
  cpu_ram: number
  cpu_cores: number
}

/**
 * Per-endpoint minimum interval in seconds. The documented `x-rate-limit.threshold` values where the
 * notes give one; 1.0 (the smallest documented) for the endpoints they give none.
 */
export const THRESHOLDS = {
  user: 1.0,
  machines: 1.0,
  machine: 1.0,
  maintenances: 1.0,
  reports: 1.2,
  create_asks: 1.0,
  unlist: 1.8,
  minbid: 1.5,
  dnotify: 2.5,
  cancel_maint: 1.0,
  create_bids: 2.8,
  defjob: 1.2,
  cleanup: 8,
  defrag: 1.0,
  force_delete: 1.0,
  earnings: 2.0,
  invoices: 3.0,
  bundles: 1.0,
} as const

export type Endpoint = keyof typeof THRESHOLDS
