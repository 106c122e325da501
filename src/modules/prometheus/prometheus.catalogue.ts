import { formatNumber, type MetricType } from './exposition'

/**
 * The metric families of GET /metrics/prometheus, as data (docs/prometheus.md "Metrics" lists the
 * same, with the scope that shows each). Names follow prom-client's
 * conventions: `gpuhq_` first, the base unit last (`_celsius`, `_watts`, `_bytes`, `_ratio`,
 * `_hertz`, `_seconds`, `_usd`).
 */
export type FamilySpec = { name: string; type: MetricType; help: string }

const family = (type: MetricType, name: string, help: string): FamilySpec => ({ name, type, help })

export const PRESENCE = {
  online: family('gauge', 'gpuhq_server_online', '1 while the server is online (its agent session sends heartbeats), 0 when suspect or offline.'),
  lastSeen: family(
    'gauge',
    'gpuhq_server_last_seen_timestamp_seconds',
    "Unix time of the server's last heartbeat; absent until its agent session first came up.",
  ),
}

/**
 * The GPU readings the agents send (docs/agent.md), the latest value of each per GPU, converted to
 * its base unit. Shown while the server is not offline: an offline server's last readings are not
 * its state now.
 */
const percentToRatio = (v: number) => formatNumber(Math.round(v * 10_000) / 1_000_000)
const MIB = 1024 * 1024
export const GPU_READINGS: (FamilySpec & { metric: string; value: (v: number) => string })[] = [
  { metric: 'temperature_c', ...family('gauge', 'gpuhq_gpu_temperature_celsius', 'GPU core temperature, latest reading.'), value: formatNumber },
  {
    metric: 'hotspot_temperature_c',
    ...family('gauge', 'gpuhq_gpu_hotspot_temperature_celsius', 'GPU hotspot (junction) temperature, latest reading.'),
    value: formatNumber,
  },
  {
    metric: 'memory_temperature_c',
    ...family('gauge', 'gpuhq_gpu_memory_temperature_celsius', 'GPU memory (VRAM) temperature, latest reading.'),
    value: formatNumber,
  },
  {
    metric: 'utilization_pct',
    ...family('gauge', 'gpuhq_gpu_utilization_ratio', 'GPU utilisation from 0 to 1, latest reading.'),
    value: percentToRatio,
  },
  { metric: 'power_w', ...family('gauge', 'gpuhq_gpu_power_watts', 'GPU power draw, latest reading.'), value: formatNumber },
  {
    metric: 'memory_used_mb',
    ...family('gauge', 'gpuhq_gpu_memory_used_bytes', 'GPU memory in use (the agent reports MiB), latest reading.'),
    value: (v) => formatNumber(Math.round(v * MIB)),
  },
  {
    metric: 'fan_pct',
    ...family('gauge', 'gpuhq_gpu_fan_speed_ratio', 'GPU fan speed from 0 to 1 of its maximum, latest reading.'),
    value: percentToRatio,
  },
  {
    metric: 'clock_sm_mhz',
    ...family('gauge', 'gpuhq_gpu_sm_clock_hertz', 'GPU streaming-multiprocessor clock, latest reading.'),
    value: (v) => formatNumber(Math.round(v * 1_000_000)),
  },
  // The health readings of a real driver (docs/agent.md "Health readings").
  {
    metric: 'pcie_link_gen',
    ...family('gauge', 'gpuhq_gpu_pcie_link_generation', 'PCIe link generation now (pcie.link.gen.current); an idle GPU trains it down to save power.'),
    value: formatNumber,
  },
  {
    metric: 'pcie_link_width',
    ...family('gauge', 'gpuhq_gpu_pcie_link_width_lanes', 'PCIe link width now, in lanes (pcie.link.width.current).'),
    value: formatNumber,
  },
  { metric: 'power_limit_w', ...family('gauge', 'gpuhq_gpu_power_limit_watts', 'GPU power limit in force (power.limit).'), value: formatNumber },
  {
    metric: 'ecc_corrected_volatile',
    ...family('gauge', 'gpuhq_gpu_ecc_corrected_volatile_errors', 'Corrected ECC errors since the driver last loaded (ecc.errors.corrected.volatile.total).'),
    value: formatNumber,
  },
  {
    metric: 'ecc_uncorrected_volatile',
    ...family(
      'gauge',
      'gpuhq_gpu_ecc_uncorrected_volatile_errors',
      'Uncorrected ECC errors since the driver last loaded (ecc.errors.uncorrected.volatile.total).',
    ),
    value: formatNumber,
  },
  {
    metric: 'ecc_corrected_aggregate',
    ...family('counter', 'gpuhq_gpu_ecc_corrected_errors_total', "Corrected ECC errors over the board's life (ecc.errors.corrected.aggregate.total)."),
    value: formatNumber,
  },
  {
    metric: 'ecc_uncorrected_aggregate',
    ...family('counter', 'gpuhq_gpu_ecc_uncorrected_errors_total', "Uncorrected ECC errors over the board's life (ecc.errors.uncorrected.aggregate.total)."),
    value: formatNumber,
  },
  {
    metric: 'retired_pages_sbe',
    ...family(
      'gauge',
      'gpuhq_gpu_retired_pages_single_bit',
      'Memory pages retired for single-bit ECC errors (retired_pages.single_bit_ecc.count; GPUs before Ampere).',
    ),
    value: formatNumber,
  },
  {
    metric: 'retired_pages_dbe',
    ...family(
      'gauge',
      'gpuhq_gpu_retired_pages_double_bit',
      'Memory pages retired for double-bit ECC errors (retired_pages.double_bit.count; GPUs before Ampere).',
    ),
    value: formatNumber,
  },
  {
    metric: 'remapped_rows_correctable',
    ...family('gauge', 'gpuhq_gpu_remapped_rows_correctable', 'Memory rows remapped for correctable errors (remapped_rows.correctable; Ampere and later).'),
    value: formatNumber,
  },
  {
    metric: 'remapped_rows_uncorrectable',
    ...family(
      'gauge',
      'gpuhq_gpu_remapped_rows_uncorrectable',
      'Memory rows remapped for uncorrectable errors (remapped_rows.uncorrectable; Ampere and later).',
    ),
    value: formatNumber,
  },
  {
    metric: 'remapped_rows_pending',
    ...family('gauge', 'gpuhq_gpu_remapped_rows_pending', '1 while a row remapping waits for a GPU reset (remapped_rows.pending), else 0.'),
    value: formatNumber,
  },
  {
    metric: 'remapped_rows_failure',
    ...family('gauge', 'gpuhq_gpu_remapped_rows_failed', '1 when a row remapping failed (remapped_rows.failure): the board needs service, else 0.'),
    value: formatNumber,
  },
]

export const GPU_HEALTH = {
  pcieDegraded: family(
    'gauge',
    'gpuhq_gpu_pcie_link_degraded',
    'Whether the PCIe link runs below what the GPU and board allow (pcie_link_degraded of GET /servers/{id}): 1 when the width is below its maximum, or the generation below its maximum while the GPU is busy; 0 otherwise; absent when unknown.',
  ),
  xids: family(
    'counter',
    'gpuhq_gpu_xid_errors_total',
    'NVIDIA Xid errors the agent read from the kernel log, per Xid number (xid label); a series without gpu and model is an Xid the agent could not tie to a GPU.',
  ),
}

export const GPU_INVENTORY = {
  memoryTotal: {
    ...family('gauge', 'gpuhq_gpu_memory_total_bytes', "GPU memory size from the agent's inventory (MiB as reported)."),
    value: (mib: number) => formatNumber(Math.round(mib * MIB)),
  },
}

export const RENTALS = {
  rented: family('gauge', 'gpuhq_server_rented', '1 while a rental runs on the server, by any source (rental_active of GET /servers/{id}), else 0.'),
  running: family(
    'gauge',
    'gpuhq_server_rental_running',
    '1 per source reporting a running rental on the server: marketplace is marketplace_a or marketplace_b, or operator or agent for their own fact (rental_sources of GET /servers/{id}).',
  ),
}

export const EARNINGS = {
  accruedToday: family(
    'gauge',
    'gpuhq_earnings_accrued_today_usd',
    "Earnings accrued since 00:00 UTC from running deals (price times time, before the platform's cut): earn_usd_accrued of today's row of GET /marketplaces/earnings. An estimate from marketplace data, not a ledger.",
  ),
}

export const BALANCE = {
  balance: family('gauge', 'gpuhq_balance_usd', 'Account balance (balance_usd of GET /billing).'),
  timeLeft: family(
    'gauge',
    'gpuhq_balance_time_left_seconds',
    "How long the balance lasts at the current fleet's charge (GET /billing's estimate per day); 0 once the balance is not above zero; absent when nothing is charged.",
  ),
}
