import type { ServerRow } from './fleet.repository'
import { formatDecimal } from '../../platform/numbers'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { plausibleReading } from '../telemetry'

/** Latest values of one server: GPU index (-1 for the host) → metric → value. */
export type LatestByGpu = Map<number, Map<string, number | null>>
export type FleetRow = ReturnType<typeof fleetRow>

const round1 = (n: number) => Math.round(n * 10) / 10

function valueOrNull(v: number | null | undefined): number | null {
  return typeof v === 'number' ? round1(v) : null
}

/** One server's row of GET /servers (and the head of its detail), from the row and its latest metrics. */
export function fleetRow(s: ServerRow, metrics: LatestByGpu) {
  // One vitals entry per GPU (the agent's inventory and any GPU that reported), ordered by index.
  const inventory = s.gpus.map((g) => g.index)
  const gpuIndexes = [...new Set([...inventory, ...[...metrics.keys()].filter((i) => i >= 0)])].sort((a, b) => a - b)
  // A stored value outside its metric's range (from before ingest was bounded) reads as no reading.
  const reading = (i: number, metric: string) => plausibleReading(metric, i, metrics.get(i)?.get(metric))
  const gpuValues = (metric: string) => gpuIndexes.map((i) => reading(i, metric)).filter((v): v is number => v !== null)
  const max = (metric: string) => {
    const v = gpuValues(metric)
    return v.length ? Math.max(...v) : null
  }
  const util = gpuValues('utilization_pct')
  return {
    id: s.id,
    name: s.name,
    agent_version: s.agentVersion,
    gpu_count: s.gpuCount,
    gpu_model: s.gpuModel,
    fsm_state: 'new' as const,
    ...(s.maintenanceSince !== null ? { maintenance: { since: formatTimestamp(s.maintenanceSince), reason: s.maintenanceReason } } : {}),
    presence: s.presence,
    marketplace: null as string | null,
    price_usd_gpu_h: null as string | null,
    health: null as string | null,
    last_seen_at: formatNullableTimestamp(s.lastSeenAt),
    revenue_today_usd: '0.00',
    max_temp_core_c: max('temperature_c'),
    max_temp_hotspot_c: max('hotspot_temperature_c'),
    max_temp_vram_c: max('memory_temperature_c'),
    max_fan_pct: max('fan_pct'),
    // The shared formatter: two decimals, never exponent notation (null if the sum overflows).
    avg_util_pct: util.length ? formatDecimal(util.reduce((a, b) => a + b, 0) / util.length, 2, 2) : null,
    group_id: s.groupId,
    tags: s.tags,
    gpu_vitals: gpuIndexes.slice(0, 128).map((i) => ({
      index: i,
      temp_c: valueOrNull(reading(i, 'temperature_c')),
      fan_pct: valueOrNull(reading(i, 'fan_pct')),
    })),
    // Not part of the wire row: kept for the q filter on hostname.
    _hostname: s.hostname,
  }
}
