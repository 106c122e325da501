/** The wire shapes the console reads (the OpenAPI document at /api/v1/openapi.json is the reference). */

export type Presence = 'online' | 'suspect' | 'offline'

export type Snapshot = { generated_at: string; data_as_of: string; version: number; stale: boolean; stale_reason: string | null }

export type ServerRow = {
  id: string
  name: string
  agent_version: string | null
  gpu_count: number
  gpu_model: string
  maintenance?: { since: string; reason: string | null }
  presence: Presence
  marketplace: string | null
  price_usd_gpu_h: string | null
  health: string | null
  last_seen_at: string | null
  revenue_today_usd: string
  max_temp_core_c: number | null
  max_temp_hotspot_c: number | null
  max_fan_pct: number | null
  avg_util_pct: string | null
  group_id: string | null
  tags: string[]
  gpu_vitals: { index: number; temp_c: number | null; fan_pct: number | null }[]
  /** Beside the spec's row (docs/fleet.md): rented (a rental runs), idle (listed, nothing rented), null (not offered). */
  rental_state?: 'rented' | 'idle' | null
  rented_gpu_count?: number
  open_incidents?: number
}

export type Margin = {
  days: number
  from_day: string
  to_day: string
  earned_usd: string
  platform_cut_usd: string | null
  electricity_usd: string | null
  gpuhq_charges_usd: string
  margin_usd: string
  estimate: boolean
  missing: string[]
}

type MetricValues = Record<string, { value: number | null; t: string }>

export type ServerDetail = ServerRow & {
  version: number
  hostname: string | null
  public_ip: string | null
  disk_gb: number | null
  port_range: string | null
  gpus: { index: number; model: string; memory_mb?: number | null; uuid?: string | null }[]
  telemetry: { host: MetricValues; gpus: { index: number; metrics: MetricValues }[] }
  keep_on: string[]
  electricity_usd_per_kwh: string | null
  rental_active: boolean
  rental_sources: string[]
  margin?: Margin
  last_hello_at: string | null
  enrolled_at: string | null
  created_at: string
  decommissioned_at: string | null
}

export type Dashboard = Snapshot & {
  servers: { total: number; online: number; suspect: number; offline: number; in_maintenance: number }
  gpus: { total: number; by_model: { model: string; count: number }[]; rented?: number; idle?: number; unlisted?: number; offline?: number }
  groups: { group_id: string | null; servers: number }[]
  revenue_today_usd: string
}

export type Group = { id: string; name: string; position: number; servers: number; version: number; created_at: string }

export type ServerEvent = { id: string; kind: string; severity: 'info' | 'warning' | 'error' | 'critical'; message: string; data: unknown; created_at: string }

export type Command = {
  command_id: string
  server_id: string
  type: string
  params: Record<string, unknown>
  requires: 'none' | 'idle' | 'after_rental'
  delivery_status: 'queued' | 'routing' | 'sent' | 'accepted' | 'delivery_failed'
  execution_status: 'not_started' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'expired'
  queue_reason: string | null
  progress: number | null
  result: unknown
  error: { code: string; message: string; retryable: boolean; stage?: string | null; details?: unknown; log_ref?: string | null } | null
  issued_by: { type: string; id?: string }
  created_at: string
  sent_at: string | null
  accepted_at: string | null
  started_at: string | null
  finished_at: string | null
  cancelled_at: string | null
  version: number
}

export type CatalogueItem = { type: string; schema_version: number; dangerous: boolean; description: string; params: JsonSchema }

export type JsonSchema = {
  type?: string
  properties?: Record<string, JsonSchema>
  required?: string[]
  anyOf?: JsonSchema[]
  minimum?: number
  maximum?: number
  pattern?: string
  description?: string
}

type Remote = {
  listed: boolean | null
  hostname: string | null
  reliability: number | null
  rentals_running: number | null
  gpu_name: string | null
  gpu_count: number | null
  gpu_model: string | null
  price_gpu_hour: string | null
  min_bid_hour: string | null
  maintenance_announced: boolean
  maintenance_starts_at: string | null
  maintenance_hours: number | null
  error: string | null
  earnings_day: string | null
}

export type Link = {
  server_id: string
  marketplace: 'marketplace_a' | 'marketplace_b'
  external_machine_id: string
  state: 'linked' | 'stale' | 'conflict'
  linked_at: string
  last_seen_at: string | null
  remote: Remote
  marketplace_b?: { coin_prices: Record<string, number> | null; max_rental_hours: number | null } & Record<string, unknown>
  electricity_usd_per_gpu_hour: string | null
}

export type PlanInfo = {
  code: string
  label: string
  monthly_price_per_server_usd: string | null
  contract_priced: boolean
  upgrade_effective: string
  downgrade_effective: string
  capabilities: Record<string, boolean | number | null>
}

export type Billing = {
  balance_usd: string
  account_state: 'active' | 'grace' | 'frozen'
  grace_ends_at: string | null
  frozen_at: string | null
  tariff: { plan: string | null; label: string | null; monthly_price_per_server_usd: string | null; contract_priced: boolean; servers_max: number | null }
  estimate: { managed_servers: number; per_day_usd: string | null; per_month_usd: string | null; days_in_month: number }
  days_left: number | null
  timezone: string
  tiles: Record<'today' | 'yesterday' | '7d' | 'month' | 'prev_month', { spend_usd: string; from: string; to: string }>
}

export type Topup = {
  id: string
  status: 'creating' | 'partially_paid' | 'succeeded' | 'review' | 'expired' | 'failed'
  amount_usd: string
  credited_usd: string
  payment_method: string
  provider: string
  provider_status: string | null
  purpose: { kind: string; target_plan?: string | null; change_id?: string | null }
  checkout_url?: string
  review_reason: string | null
  created_at: string
  expires_at: string
  succeeded_at: string | null
}

export type PlanChange = {
  id: string
  status: 'applied' | 'scheduled' | 'awaiting_payment' | 'cancelled' | 'refused'
  direction: 'upgrade' | 'downgrade' | 'lateral'
  from_plan: string
  target_plan: string
  effective_at: string
  billing_effective_day: string
  required_reserve_usd: string
  refusal_reason: string | null
  topup_id: string | null
  requested_at: string
}
