import type { ServerGpu } from '../../../db/schema/fleet'

/**
 * What fleet derives from an agent's hardware facts and health readings (docs/agent.md "Health
 * readings"), the one rule GET /servers/{id}, the console and Prometheus share.
 */

/**
 * Whether the GPU's PCIe link runs below what the GPU and the board allow: its width below the
 * maximum width, or its generation below the maximum while the GPU is busy (utilisation above 0).
 * An idle GPU trains its link down to a lower generation to save power (the RTX captures in
 * tests/agent/captures/ show gen 1 of 3 and of 4 at idle), which is not a fault. Null when neither
 * the width nor the generation can be compared.
 */
export function pcieLinkDegraded(
  gpu: Pick<ServerGpu, 'pcie_gen_max' | 'pcie_width_max'> | undefined,
  readings: ReadonlyMap<string, number | null>,
): boolean | null {
  const width = readings.get('pcie_link_width') ?? null
  const gen = readings.get('pcie_link_gen') ?? null
  const util = readings.get('utilization_pct') ?? null
  const widthMax = gpu?.pcie_width_max ?? null
  const genMax = gpu?.pcie_gen_max ?? null
  const widthKnown = width !== null && widthMax !== null
  const genKnown = gen !== null && genMax !== null && util !== null
  if (widthKnown && width < widthMax) return true
  if (genKnown && gen < genMax && util > 0) return true
  return widthKnown || genKnown ? false : null
}

/** The bits of `clock_event_reasons` (NVML's nvmlClocksEventReason*, nvidia-smi's clocks_event_reasons.active). */
const CLOCK_EVENT_REASONS: [number, string][] = [
  [0x1, 'gpu_idle'],
  [0x2, 'applications_clocks_setting'],
  [0x4, 'sw_power_cap'],
  [0x8, 'hw_slowdown'],
  [0x10, 'sync_boost'],
  [0x20, 'sw_thermal_slowdown'],
  [0x40, 'hw_thermal_slowdown'],
  [0x80, 'hw_power_brake_slowdown'],
  [0x100, 'display_clock_setting'],
]

/** The reasons set in the bitmask, by name; null when it is unknown. Bits past the table are named `bit_<n>`. */
export function clockEventReasons(mask: number | null | undefined): string[] | null {
  if (typeof mask !== 'number' || !Number.isSafeInteger(mask) || mask < 0) return null
  const names: string[] = []
  for (let bit = 0; bit < 53 && 2 ** bit <= mask; bit++) {
    const value = 2 ** bit
    if (Math.floor(mask / value) % 2 === 1) names.push(CLOCK_EVENT_REASONS.find(([v]) => v === value)?.[1] ?? `bit_${bit}`)
  }
  return names
}
