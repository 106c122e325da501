import type { ServerRow } from './fleet.repository'
import { formatMoney, formatNullableMoney } from '../../platform/money'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { rentalRunning } from './rentals'
import type { IncidentCounts, RowFacts, ServerListing } from './row-facts'
import { formatDecimal } from '../../platform/numbers'
import { plausibleReading } from '../telemetry'

/** Latest values of one server: GPU index (-1 for the host) → metric → value. */
export type LatestByGpu = Map<number, Map<string, number | null>>
export type FleetRow = ReturnType<typeof fleetRow>

const round1 = (n: number) => Math.round(n * 10) / 10

function valueOrNull(v: number | null | undefined): number | null {
  return typeof v === 'number' ? round1(v) : null
}

/** One server's facts from the modules above fleet (row-facts.ts). */
export type ServerFacts = { listing: ServerListing | undefined; revenueTodayMicros: number; incidents: IncidentCounts }

export function factsOf(facts: RowFacts, serverId: string): ServerFacts {
  return {
    listing: facts.listings.get(serverId),
    revenueTodayMicros: facts.revenueTodayMicros.get(serverId) ?? 0,
    incidents: facts.incidents.get(serverId) ?? { critical: 0, warning: 0, info: 0 },
  }
}

export type Health = 'ok' | 'warning' | 'critical'

/**
 * The row's `health` (docs/fleet.md): critical with an unresolved critical incident on the server or
 * when it is offline outside maintenance; warning with an unresolved warning incident, when suspect,
 * or offline in a declared maintenance; ok otherwise (info incidents do not count).
 */
function healthOf(s: Pick<ServerRow, 'presence' | 'maintenanceSince'>, incidents: IncidentCounts): Health {
  const inMaintenance = s.maintenanceSince !== null
  if (incidents.critical > 0 || (s.presence === 'offline' && !inMaintenance)) return 'critical'
  if (incidents.warning > 0 || s.presence === 'suspect' || s.presence === 'offline') return 'warning'
  return 'ok'
}

/**
 * `rental_state`: rented when a rental runs by any source (a marketplace the sync read, or the
 * operator's or agent's fact); idle when listed on a platform with nothing rented; null otherwise.
 */
function rentalStateOf(s: Pick<ServerRow, 'rentalActive' | 'rentalSource' | 'marketRentals'>, listing: ServerListing | undefined): 'rented' | 'idle' | null {
  if (rentalRunning(s) || listing?.rented) return 'rented'
  return listing?.listed ? 'idle' : null
}

/** One server's row of GET /servers (and the head of its detail), from the row, its latest metrics and its facts. */
export function fleetRow(s: ServerRow, metrics: LatestByGpu, facts: ServerFacts) {
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
  const rentalState = rentalStateOf(s, facts.listing)
  // Rented GPUs: what the platform says; all of them when it does not say, or when only the operator's fact says so.
  const rentedGpus = rentalState !== 'rented' ? 0 : Math.min(s.gpuCount, facts.listing?.rented ? (facts.listing.rentedGpus ?? s.gpuCount) : s.gpuCount)
  return {
    id: s.id,
    name: s.name,
    agent_version: s.agentVersion,
    gpu_count: s.gpuCount,
    gpu_model: s.gpuModel,
    fsm_state: 'new' as const,
    ...(s.maintenanceSince !== null ? { maintenance: { since: formatTimestamp(s.maintenanceSince), reason: s.maintenanceReason } } : {}),
    presence: s.presence,
    marketplace: (facts.listing?.marketplace ?? null) as string | null,
    price_usd_gpu_h: formatNullableMoney(facts.listing?.priceMicros),
    health: healthOf(s, facts.incidents) as string | null,
    last_seen_at: formatNullableTimestamp(s.lastSeenAt),
    revenue_today_usd: formatMoney(facts.revenueTodayMicros),
    max_temp_core_c: max('temperature_c'),
    max_temp_hotspot_c: max('hotspot_temperature_c'),
    max_temp_vram_c: max('memory_temperature_c'),
    max_fan_pct: max('fan_pct'),
    // The shared formatter: two decimals, never exponent notation (null if the sum overflows).
    avg_util_pct: util.length ? formatDecimal(util.reduce((a, b) => a + b, 0) / util.length, 2, 2) : null,
    group_id: s.groupId,
    tags: s.tags,
    rental_state: rentalState,
    rented_gpu_count: rentedGpus,
    open_incidents: facts.incidents.critical + facts.incidents.warning + facts.incidents.info,
    gpu_vitals: gpuIndexes.slice(0, 128).map((i) => ({
      index: i,
      temp_c: valueOrNull(reading(i, 'temperature_c')),
      fan_pct: valueOrNull(reading(i, 'fan_pct')),
    })),
    // Not part of the wire row: kept for the q filter on hostname.
    _hostname: s.hostname,
  }
}
