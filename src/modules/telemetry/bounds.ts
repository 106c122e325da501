/**
 * The range a reported value of each metric may take (docs/telemetry.md "Bounds of reported
 * values"): what the hardware can physically report while it still works, with room to spare.
 * A value outside is a sensor's sentinel or a broken agent (a utilisation of 1e308 once made
 * GET /servers a 500), and is dropped at ingest with an `error` frame. Metrics the protocol does
 * not name are bounded by magnitude only, ±1e15, which keeps every value exact to 12 significant
 * digits and far from where a number would be written with an exponent.
 */
export type MetricRange = { min: number; max: number }

const TEMPERATURE: MetricRange = { min: -50, max: 200 }
const PERCENT: MetricRange = { min: 0, max: 100 }
/** NVML's clock event reasons: bits up to 2^40 leave room for reasons not yet defined. */
const BITMASK: MetricRange = { min: 0, max: 2 ** 40 }
/** ECC error counters: a board's lifetime count, never negative. */
const COUNT: MetricRange = { min: 0, max: 1e12 }
/** Retired pages and remapped rows: a few hundred at most before a board is replaced. */
const PAGES: MetricRange = { min: 0, max: 1_000_000 }
/** Yes/No as 1/0. */
const FLAG: MetricRange = { min: 0, max: 1 }

/** The protocol's metrics (the agent protocol's "Metrics"), by scope where the two differ. */
const NAMED: Record<string, { gpu: MetricRange; host: MetricRange }> = {
  temperature_c: { gpu: TEMPERATURE, host: TEMPERATURE },
  hotspot_temperature_c: { gpu: TEMPERATURE, host: TEMPERATURE },
  memory_temperature_c: { gpu: TEMPERATURE, host: TEMPERATURE },
  utilization_pct: { gpu: PERCENT, host: PERCENT },
  fan_pct: { gpu: PERCENT, host: PERCENT },
  cpu_usage_pct: { gpu: PERCENT, host: PERCENT },
  memory_used_pct: { gpu: PERCENT, host: PERCENT },
  disk_used_pct: { gpu: PERCENT, host: PERCENT },
  // The largest GPU boards hold a few hundred GB (1 TiB leaves room).
  memory_used_mb: { gpu: { min: 0, max: 1_048_576 }, host: { min: 0, max: 16_777_216 } },
  clock_sm_mhz: { gpu: { min: 0, max: 10_000 }, host: { min: 0, max: 10_000 } },
  // A GPU board draws at most a few kW; a whole host with its GPUs tens of kW.
  power_w: { gpu: { min: 0, max: 5_000 }, host: { min: 0, max: 100_000 } },
  net_rx_mbps: { gpu: { min: 0, max: 10_000_000 }, host: { min: 0, max: 10_000_000 } },
  net_tx_mbps: { gpu: { min: 0, max: 10_000_000 }, host: { min: 0, max: 10_000_000 } },
  hashrate: { gpu: { min: 0, max: 1e15 }, host: { min: 0, max: 1e15 } },
  // The health readings of a real driver (docs/agent.md "Health readings").
  pcie_link_gen: { gpu: { min: 0, max: 16 }, host: { min: 0, max: 16 } },
  pcie_link_width: { gpu: { min: 0, max: 64 }, host: { min: 0, max: 64 } },
  power_limit_w: { gpu: { min: 0, max: 5_000 }, host: { min: 0, max: 100_000 } },
  clock_event_reasons: { gpu: BITMASK, host: BITMASK },
  ecc_corrected_volatile: { gpu: COUNT, host: COUNT },
  ecc_uncorrected_volatile: { gpu: COUNT, host: COUNT },
  ecc_corrected_aggregate: { gpu: COUNT, host: COUNT },
  ecc_uncorrected_aggregate: { gpu: COUNT, host: COUNT },
  retired_pages_sbe: { gpu: PAGES, host: PAGES },
  retired_pages_dbe: { gpu: PAGES, host: PAGES },
  retired_pages_pending: { gpu: FLAG, host: FLAG },
  remapped_rows_correctable: { gpu: PAGES, host: PAGES },
  remapped_rows_uncorrectable: { gpu: PAGES, host: PAGES },
  remapped_rows_pending: { gpu: FLAG, host: FLAG },
  remapped_rows_failure: { gpu: FLAG, host: FLAG },
}

/**
 * Any other metric: its name says too little of its physical meaning (a `_pct` load can pass 100,
 * a `_mb` delta can be negative), so only magnitude is bounded.
 */
const OTHER: MetricRange = { min: -1e15, max: 1e15 }

export function metricRange(metric: string, scope: 'gpu' | 'host'): MetricRange {
  return NAMED[metric]?.[scope] ?? OTHER
}

/** Whether `value` (a reported measurement, or null for "no reading") may be stored for `metric`. */
export function inMetricRange(metric: string, scope: 'gpu' | 'host', value: number | null): boolean {
  if (value === null) return true
  const { min, max } = metricRange(metric, scope)
  return Number.isFinite(value) && value >= min && value <= max
}

/**
 * A stored latest value as the fleet reads it: one outside its metric's range (stored before these
 * bounds existed) reads as no reading, so it can neither skew a row nor overflow its rounding.
 * `gpuIndex` −1 is the host.
 */
export function plausibleReading(metric: string, gpuIndex: number, value: number | null | undefined): number | null {
  return typeof value === 'number' && inMetricRange(metric, gpuIndex < 0 ? 'host' : 'gpu', value) ? value : null
}
