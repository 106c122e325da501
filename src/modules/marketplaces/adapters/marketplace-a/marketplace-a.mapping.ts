import { formatMoney, MAX_MONEY_MICROS, parseDecimal, parseMoney } from '../../../../platform/money'
import { formatDecimal } from '../../../../platform/numbers'
import { replaceUnstorable } from '../../../../platform/storable'
import { formatTimestamp } from '../../../../platform/time'
import { normaliseGpuModel } from '../gpu-model'
import type { MachineFacts, MarketOffer, PayoutRead, RemoteMachine, RemoteProjection, RenterReportRead } from '../marketplaces.adapter'

/**
 * One element of Vast's `GET /api/v0/machines/?owner=me` turned into the link's `remote`
 * projection and a candidate's facts (docs/marketplaces.md; the field list is the research notes'
 * section 1.2). Every field is read only when it has the expected type: a field Vast did not send,
 * sent as null or sent as something else is null here, never zero.
 */

type Json = Record<string, unknown>

const str = (v: unknown, max: number): string | null => (typeof v === 'string' && v !== '' ? v.slice(0, max) : null)
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)
const int = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) ? v : null)
const bool = (v: unknown): boolean | null => (typeof v === 'boolean' ? v : null)

/**
 * A price Vast sends as a JSON number (USD, e.g. 0.43000000000000005) as a money decimal string,
 * times `factor` (1000 turns per-GB into per-TB), rounded half up to the micro-dollar. No float
 * arithmetic: a JSON number reaches us as a double whose shortest text is the number Vast's
 * Python wrote (also its shortest repr), and parseDecimal reads that text exactly.
 * Half up rather than down so a Python artefact such as 0.06999999999999999 stays 0.07.
 */
export function vastMoney(v: unknown, factor: 1 | 1000 = 1): string | null {
  if (typeof v !== 'number') return null
  const d = parseDecimal(v)
  if (!d) return null
  const units = d.units * BigInt(factor)
  let micros: bigint
  if (d.scale <= 6) micros = units * 10n ** BigInt(6 - d.scale)
  else {
    const div = 10n ** BigInt(d.scale - 6)
    micros = units / div
    if ((units % div) * 2n >= div) micros += 1n
  }
  return micros > BigInt(MAX_MONEY_MICROS) ? null : formatMoney(Number(micros))
}

/** Unix seconds (possibly fractional) → RFC 3339 with microseconds; null for anything else. */
function unixSeconds(v: unknown): string | null {
  const s = num(v)
  if (s === null || s <= 0) return null
  const us = Math.round(s * 1_000_000)
  return Number.isSafeInteger(us) ? formatTimestamp(us) : null
}

/**
 * Vast prints one token per card separated by spaces ("D D x x "); the spec wants one character
 * per card, so single-character tokens are joined ("DDxx"). Any other form (the CLI mock's "2/4")
 * is kept as printed, and its length then differs from the card count, which reads as "not
 * understood" downstream.
 */
function occupancy(v: unknown): string | null {
  if (typeof v !== 'string') return null
  const tokens = v.trim().split(/\s+/).filter(Boolean)
  if (tokens.length === 0) return null
  const printed = tokens.every((t) => t.length === 1) ? tokens.join('') : v.trim()
  return printed.slice(0, 64)
}

type Maintenance = Pick<RemoteProjection, 'maintenance_announced' | 'maintenance_starts_at' | 'maintenance_hours'>

/**
 * `machine_maintenance` is null, a string, or a list of windows `{start_time, duration_hours, …}`.
 * The soonest window that has not ended is shown; a non-empty string is an announcement with
 * neither start nor length known.
 */
function maintenance(v: unknown, nowUs: number): Maintenance {
  const none: Maintenance = { maintenance_announced: false, maintenance_starts_at: null, maintenance_hours: null }
  if (typeof v === 'string') return v.trim() === '' ? none : { ...none, maintenance_announced: true }
  if (!Array.isArray(v)) return none
  const windows = v
    .filter((w): w is Json => typeof w === 'object' && w !== null)
    .map((w) => ({ start: num(w.start_time), hours: num(w.duration_hours) }))
    .filter((w) => w.start === null || w.hours === null || (w.start + w.hours * 3600) * 1_000_000 > nowUs)
    .sort((a, b) => (a.start ?? Number.POSITIVE_INFINITY) - (b.start ?? Number.POSITIVE_INFINITY))
  const first = windows[0]
  if (!first) return none
  return { maintenance_announced: true, maintenance_starts_at: unixSeconds(first.start), maintenance_hours: first.hours }
}

/**
 * `duration` (seconds) set means a rolling offer: its end is now plus the window, as the spec
 * says; otherwise `end_date` (unix seconds) is a fixed end and the window is null.
 */
function offerEnd(m: Json, nowUs: number): Pick<RemoteProjection, 'end_date' | 'ask_duration_seconds'> {
  const duration = num(m.duration)
  if (duration !== null && duration > 0) return { end_date: unixSeconds(nowUs / 1_000_000 + duration), ask_duration_seconds: duration }
  return { end_date: unixSeconds(m.end_date), ask_duration_seconds: null }
}

/** Vast's `cuda_max_good` is a JSON number (13.0, 12.4): written as version text, never as a float's digits ("12.4", "13.0"). */
function versionText(v: unknown): string | null {
  const n = num(v)
  if (n === null || n < 0 || n > 1000) return null
  const text = formatDecimal(n, 3)
  if (text === null) return null
  return text.includes('.') ? text : `${text}.0`
}

/** A MiB figure Vast may send with a fraction; whole MiB, null when absent or negative. */
function wholeMb(v: unknown): number | null {
  const n = num(v)
  return n === null || n < 0 || n > 1e12 ? null : Math.round(n)
}

/** Without `gpu_total_ram`: the per-card `gpu_ram` (MiB) times `num_gpus`, as Vast's own total is. */
function totalOfPerGpu(m: Json): number | null {
  const each = wholeMb(m.gpu_ram)
  const count = int(m.num_gpus)
  return each === null || count === null || count < 0 ? null : each * count
}

function projectMachine(m: Json, nowUs: number): RemoteProjection {
  const gpuName = str(m.gpu_name, 128)
  return {
    listed: bool(m.listed),
    verification: str(m.verification, 32),
    hostname: str(m.hostname, 256),
    reliability: num(m.reliability2),
    // Vast's counter of running contracts (on-demand and interruptible); the occupancy tokens
    // count cards, not rentals, and are undocumented, so they are not used for this.
    rentals_running: int(m.current_rentals_running),
    gpu_name: gpuName,
    gpu_count: int(m.num_gpus),
    gpu_occupancy: occupancy(m.gpu_occupancy),
    // The rule both marketplaces share (gpu-model.ts): "RTX 4090" → "rtx_4090".
    gpu_model: normaliseGpuModel(gpuName),
    price_gpu_hour: vastMoney(m.listed_gpu_cost),
    min_bid_hour: vastMoney(m.min_bid_price),
    price_storage_gb_month: vastMoney(m.listed_storage_cost),
    price_inet_up_tb: vastMoney(m.listed_inet_up_cost, 1000),
    price_inet_down_tb: vastMoney(m.listed_inet_down_cost, 1000),
    min_gpu_count: int(m.listed_min_gpu_count),
    discount_max: num(m.credit_discount_max),
    ...offerEnd(m, nowUs),
    earnings_day: vastMoney(m.earn_day),
    earnings_hour: vastMoney(m.earn_hour),
    gpu_lanes: int(m.gpu_lanes),
    pcie_bandwidth_gbs: num(m.pcie_bw),
    inet_up_mbps: num(m.inet_up),
    inet_down_mbps: num(m.inet_down),
    direct_port_count: int(m.direct_port_count),
    cuda_version: versionText(m.cuda_max_good),
    driver_version: str(m.driver_version, 64),
    gpu_total_ram_mb: wholeMb(m.gpu_total_ram) ?? totalOfPerGpu(m),
    cpu_ram_mb: wholeMb(m.cpu_ram),
    cpu_cores: int(m.cpu_cores),
    ...maintenance(m.machine_maintenance, nowUs),
    error: str(m.error_description, 512) ?? str(m.vm_error_msg, 512),
    rentals: [],
  }
}

function factsOf(m: Json, remote: RemoteProjection): MachineFacts {
  const disk = num(m.disk_space) ?? num(m.max_disk_space)
  return {
    hostname: str(m.hostname, 253),
    public_ip: str(m.public_ipaddr, 45),
    gpu_model: remote.gpu_model,
    gpu_count: remote.gpu_count,
    disk_gb: disk === null ? null : Math.round(disk),
    port_range_size: remote.direct_port_count,
  }
}

/** The machine id Vast sends as `id` (and `machine_id`); null when neither is a whole number. */
function machineId(m: Json): string | null {
  const id = int(m.id) ?? int(m.machine_id)
  return id === null ? null : String(id)
}

/** Elements without a usable id cannot be linked and are left out. */
export function machinesOf(list: unknown[], nowUs: number): RemoteMachine[] {
  const out: RemoteMachine[] = []
  for (const raw of list) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) continue
    const m = raw as Json
    const id = machineId(m)
    if (id === null) continue
    const remote = projectMachine(m, nowUs)
    out.push({ externalMachineId: id, remote, marketplaceB: null, facts: factsOf(m, remote), reportCount: int(m.num_reports) })
  }
  return out
}

/**
 * The public offer search's rows (`POST /bundles/` `offers`) as asking prices: `dph_base` is the
 * offer's USD per hour for all its GPUs, so the per-GPU-hour price is dph_base ÷ num_gpus, rounded
 * half up to the micro-dollar. A row without a price or a card count carries a null price.
 */
export function marketOffersOf(list: unknown[]): MarketOffer[] {
  const out: MarketOffer[] = []
  for (const raw of list) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) continue
    const o = raw as Json
    const gpuName = str(o.gpu_name, 128)
    const gpuCount = int(o.num_gpus)
    const base = vastMoney(o.dph_base)
    const baseMicros = base === null ? null : parseMoney(base)
    const price = baseMicros !== null && gpuCount !== null && gpuCount > 0 ? Math.round(baseMicros / gpuCount) : null
    const machine = int(o.machine_id)
    out.push({
      gpuName,
      gpuModel: normaliseGpuModel(gpuName),
      gpuCount,
      priceGpuHourMicros: price,
      rentable: bool(o.rentable),
      machineId: machine === null ? null : String(machine),
    })
  }
  return out
}

/**
 * machine-earnings `per_machine` rows of one day → USD money text by machine id: gpu_earn + sto_earn
 * + bwu_earn + bwd_earn, each read exactly (vastMoney) and summed in micro-dollars. A row without a
 * machine id or without any figure is left out (the platform said nothing about it).
 */
export function dayEarningsOf(rows: unknown[]): Map<string, string> {
  const out = new Map<string, string>()
  for (const raw of rows) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) continue
    const r = raw as Json
    const id = int(r.machine_id)
    const parts = [r.gpu_earn, r.sto_earn, r.bwu_earn, r.bwd_earn].map((v) => vastMoney(v)).filter((v): v is string => v !== null)
    if (id === null || parts.length === 0) continue
    out.set(String(id), formatMoney(parts.reduce((sum, v) => sum + parseMoney(v), 0)))
  }
  return out
}

/**
 * `GET /machines/{id}/reports/` (a bare list): each report's `problem` (the category the renter
 * picked), `message` (their words) and `created_at` (unix seconds). An element that is not an
 * object, or that has neither a problem nor a message, says nothing and is left out.
 */
export function reportsOf(list: unknown[]): RenterReportRead[] {
  const out: RenterReportRead[] = []
  for (const raw of list) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) continue
    const r = raw as Json
    // A renter's words are kept, never refused: a character no database stores (U+0000, a lone surrogate) is replaced.
    const problem = str(r.problem, 256)
    const message = str(r.message, 2000)
    if (problem === null && message === null) continue
    const s = num(r.created_at)
    const us = s !== null && s > 0 ? Math.round(s * 1_000_000) : null
    out.push({
      problem: problem === null ? null : replaceUnstorable(problem),
      message: message === null ? null : replaceUnstorable(message),
      reportedAtUs: us !== null && Number.isSafeInteger(us) ? us : null,
    })
  }
  return out
}

/**
 * `GET /api/v1/invoices` `results` → payout history entries: `start`/`end` (unix seconds), `type`,
 * `amount` (USD, read exactly), `description`, `metadata.invoice_id`. An entry without a start or
 * an amount is left out (nothing to set beside a day).
 */
export function payoutsOf(rows: unknown[]): PayoutRead[] {
  const out: PayoutRead[] = []
  for (const raw of rows) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) continue
    const r = raw as Json
    const start = num(r.start)
    const amount = vastMoney(r.amount)
    if (start === null || start <= 0 || amount === null) continue
    const type = str(r.type, 32) ?? 'unknown'
    const meta = typeof r.metadata === 'object' && r.metadata !== null ? (r.metadata as Json) : {}
    const invoiceId = int(meta.invoice_id) ?? str(meta.invoice_id, 64)
    const end = num(r.end)
    out.push({
      externalId: invoiceId !== null ? String(invoiceId) : `${Math.floor(start)}:${type}:${amount}`,
      type,
      startS: Math.floor(start),
      endS: end === null || end <= 0 ? null : Math.floor(end),
      amountUsd: amount,
      description: str(r.description, 200) ?? '',
    })
  }
  return out
}
