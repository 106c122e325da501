import { type Decimal, decimalToMicrosFloor, formatMoney, parseDecimal } from '../../../../platform/money'
import { normaliseGpuModel } from '../gpu-model'
import type { Json } from './marketplace-b.wire'
import type {
  CoinPrice,
  MachineFacts,
  MarketOffer,
  MarketplaceBProjection,
  RemoteMachine,
  RemoteProjection,
  RemoteRental,
  SpotBid,
} from '../marketplaces.adapter'

/**
 * One Clore server as gpuhq's link shows it (reference section 2.2). A server is read from up to
 * four answers: its `my_servers` entry, its `server_config`, its entry in `marketplace` (public
 * servers only) and its `spot_marketplace`. A field none of them sent is null, never zero. Prices
 * are per server per day in a coin: they stay in that coin under `marketplace_b.coin_prices`, so
 * the per-GPU-hour USD fields of `remote` are null here. Fields the reference does not document
 * (partial_rental, vpn, driver_…, kernel …) are read under the spec's name when a server sends them.
 */
export type CloreServer = { entry: Json; config: Json | null; market: Json | null; spot: Json | null }

const obj = (v: unknown): Json | null => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : null)
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)
const int = (v: unknown): number | null => (Number.isSafeInteger(v) ? (v as number) : null)
const bool = (v: unknown): boolean | null => (typeof v === 'boolean' ? v : null)
const str = (v: unknown, max: number): string | null => (typeof v === 'string' && v !== '' ? v.slice(0, max) : null)
const strs = (v: unknown): string[] | null => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : null)
/** The first value that was sent. */
const first = (...vs: unknown[]): unknown => vs.find((v) => v !== undefined && v !== null)

/** A coin amount exactly as written (0.00010337 stays "0.00010337"), never through a float's rounding. */
function decimalText(d: Decimal | null): string | null {
  if (d === null) return null
  const digits = d.units.toString().padStart(d.scale + 1, '0')
  if (d.scale === 0) return digits
  const text = `${digits.slice(0, -d.scale)}.${digits.slice(-d.scale)}`.replace(/0+$/, '').replace(/\.$/, '')
  return text
}
const coinText = (v: unknown): string | null => decimalText(parseDecimal(v))

/** USD amount → money decimal, rounded down to the micro-dollar. */
function usd(d: Decimal | null): string | null {
  const micros = d === null ? null : decimalToMicrosFloor(d)
  return micros === null ? null : formatMoney(micros)
}
const times = (a: Decimal, b: Decimal): Decimal => ({ units: a.units * b.units, scale: a.scale + b.scale })

/** "1x GeForce GTX 1080 Ti" → 1 card of "GeForce GTX 1080 Ti"; without the "Nx" prefix the count is unknown. */
function gpuOf(specs: Json | null, market: Json | null): { name: string | null; count: number | null } {
  const text = str(specs?.gpu, 256)
  const m = text ? /^\s*(\d+)\s*x\s+(.+?)\s*$/i.exec(text) : null
  const gpus = Array.isArray(specs?.gpus) ? (specs.gpus as unknown[]) : null
  const array = strs(market?.gpu_array)
  const name = m ? m[2]! : (text ?? str(obj(gpus?.[0])?.type, 128) ?? str(array?.[0], 128))
  const count = m ? Number(m[1]) : (gpus?.length ?? array?.length ?? null)
  return { name: name ? name.slice(0, 128) : null, count: count !== null && Number.isSafeInteger(count) ? count : null }
}

/** "NVMe 512GB" → 512, "SSD 2TB" → 2000; anything else is unknown. */
function diskGb(v: unknown): number | null {
  const m = typeof v === 'string' ? /(\d+(?:\.\d+)?)\s*(TB|GB)\b/i.exec(v) : null
  if (!m) return num(v) === null ? null : Math.round(v as number)
  return Math.round(Number(m[1]) * (m[2]!.toUpperCase() === 'TB' ? 1000 : 1))
}

/** Clore's `cuda_version` is text ("12.4"); kept when it reads as a version. */
function cudaText(v: unknown): string | null {
  return typeof v === 'string' && /^\d{1,3}(\.\d{1,3}){0,2}$/.test(v.trim()) ? v.trim() : null
}

/** Clore writes memory in GB (`ram: 62.67`, `gpuram: 11`); gpuhq counts MiB, as Vast does: × 1024, whole. */
function gbToMb(v: unknown): number | null {
  const n = num(v)
  return n === null || n < 0 || n > 1e9 ? null : Math.round(n * 1024)
}

/** `specs.gpuram` is per card: the machine's total is that times the card count. */
function totalVramMb(perCardGb: unknown, count: number | null): number | null {
  const each = gbToMb(perCardGb)
  return each === null || count === null ? null : each * count
}

/** `specs.cpus` is "cores/threads" ("8/16"): the threads are the logical CPUs Vast counts as `cpu_cores`; a lone number is taken as it is. */
function threadsOf(v: unknown): number | null {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? v : null
  const m = typeof v === 'string' ? /^\s*(\d+)\s*(?:\/\s*(\d+))?\s*$/.exec(v) : null
  if (!m) return null
  const n = Number(m[2] ?? m[1])
  return Number.isSafeInteger(n) ? n : null
}

function coinPrices(onDemand: Json | null, spot: Json | null): Record<string, CoinPrice> | null {
  if (!onDemand && !spot) return null
  const out: Record<string, CoinPrice> = {}
  for (const coin of new Set([...Object.keys(onDemand ?? {}), ...Object.keys(spot ?? {})]))
    out[coin] = { on_demand: coinText(onDemand?.[coin]), spot: coinText(spot?.[coin]) }
  return out
}

function spotOf(spot: Json | null): MarketplaceBProjection['spot'] {
  const market = obj(spot?.market)
  if (!market) return null
  const rates: Record<string, string> = {}
  const rateDecimals = new Map<string, Decimal>()
  for (const [coin, rate] of Object.entries(obj(market.currency_rates_in_usd) ?? {})) {
    const d = parseDecimal(rate)
    const text = usd(d)
    if (d && text !== null) {
      rates[coin] = text
      rateDecimals.set(coin, d)
    }
  }
  const bids: SpotBid[] = []
  let best: Decimal | null = null
  for (const offer of Array.isArray(market.offers) ? market.offers : []) {
    const o = obj(offer)
    const bid = parseDecimal(o?.bid)
    if (!o || !bid) continue
    const currency = str(o.currency, 32)
    bids.push({ offer_id: int(o.offer_id), bid: decimalText(bid)!, currency, active: o.active === true, mine: o.my === true })
    const rate = currency === null ? undefined : rateDecimals.get(currency)
    const inUsd = rate ? times(bid, rate) : null
    if (inUsd && (best === null || inUsd.units * 10n ** BigInt(best.scale) > best.units * 10n ** BigInt(inUsd.scale))) best = inUsd
  }
  return { bids, rates_usd_per_coin: rates, best_bid_usd: usd(best) }
}

/**
 * Clore shows no host-side order list. What is known per order: each active spot offer is a running
 * spot order (its bid is its per-day price in its coin); a server rented (rental_status ≠ 0, or
 * `rented`) with no active spot offer runs one on-demand order whose terms the API does not show.
 */
function rentalsOf(s: CloreServer, spot: MarketplaceBProjection['spot']): RemoteRental[] | null {
  const status = int(s.config?.rental_status)
  const rented = status !== null ? status !== 0 : bool(s.market?.rented)
  const running: RemoteRental[] = (spot?.bids ?? [])
    .filter((b) => b.active)
    .map((b) => ({ kind: 'spot', currency: b.currency, price_day: b.bid, gpu_count: null, ends_at: null }))
  if (running.length === 0 && rented === true) running.push({ kind: 'on_demand', currency: null, price_day: null, gpu_count: null, ends_at: null })
  return rented === null && spot === null ? null : running
}

export function mapCloreServer(s: CloreServer): RemoteMachine {
  const { entry, config, market } = s
  // my_servers first, then server_config, then the marketplace entry: the owner's own reads win.
  const field = (name: string) => first(entry[name], config?.[name], market?.[name])
  const specs = obj(first(entry.specs, config?.specs, market?.specs))
  const spec = (name: string) => first(specs?.[name], field(name))
  const spotMarket = obj(s.spot?.market)
  const spotServer = obj(spotMarket?.server)
  const gpu = gpuOf(specs, market)
  const net = obj(specs?.net)
  const spot = spotOf(s.spot)
  const rentals = rentalsOf(s, spot)
  const visibility = first(entry.visibility, config?.visibility, spotServer?.visibility)
  const autoprice = obj(field('autoprice'))
  const id = int(first(entry.id, config?.id))
  const name = str(entry.name, 256)

  const remote: RemoteProjection = {
    listed: visibility === 'public' ? true : visibility === 'hidden' ? false : null,
    verification: null,
    hostname: name,
    reliability: num(market?.reliability),
    rentals_running: rentals === null ? null : rentals.length,
    gpu_name: gpu.name,
    gpu_count: gpu.count,
    gpu_occupancy: null,
    gpu_model: normaliseGpuModel(gpu.name),
    price_gpu_hour: null,
    min_bid_hour: null,
    price_storage_gb_month: null,
    price_inet_up_tb: null,
    price_inet_down_tb: null,
    min_gpu_count: null,
    discount_max: null,
    end_date: null,
    ask_duration_seconds: null,
    earnings_day: null,
    earnings_hour: null,
    gpu_lanes: int(spec('pcie_width')),
    pcie_bandwidth_gbs: null,
    inet_up_mbps: num(net?.up),
    inet_down_mbps: num(net?.down),
    direct_port_count: null,
    cuda_version: cudaText(first(market?.cuda_version, field('cuda_version'))),
    driver_version: str(spec('driver_version'), 64),
    gpu_total_ram_mb: totalVramMb(spec('gpuram'), gpu.count),
    cpu_ram_mb: gbToMb(spec('ram')),
    cpu_cores: threadsOf(spec('cpus')),
    maintenance_announced: false,
    maintenance_starts_at: null,
    maintenance_hours: null,
    error: null,
    rentals: rentals ?? [],
  }
  const marketplaceB: MarketplaceBProjection = {
    max_rental_hours: int(first(field('mrl'), spotServer?.mrl)),
    partial_rental: bool(field('partial_rental')),
    vpn: bool(field('vpn')),
    partner: bool(field('partner')),
    overclock: bool(field('overclock')),
    update_channel: str(field('update_channel'), 32),
    backend_version: int(spec('backend_version')),
    target_backend_version: int(spec('target_backend_version')),
    driver_status: str(spec('driver_status'), 32),
    driver_version: str(spec('driver_version'), 64),
    kernel: str(spec('kernel'), 128),
    max_fair_price_day: num(field('max_fair_price_day')),
    coins: strs(first(entry.allowed_currencies, config?.allowed_coins, market?.allowed_coins)),
    // A coin priced in itself is one not pegged to USD by `autoprice` (`{coin: "usd" | false}`).
    fixed_coins: autoprice ? Object.keys(autoprice).filter((coin) => autoprice[coin] === false) : null,
    coin_prices: coinPrices(
      obj(first(entry.pricing, config?.pricing, obj(market?.price)?.on_demand)),
      obj(first(entry.min_spot_pricing, config?.spot_pricing, spotServer?.min_pricing, obj(market?.price)?.spot)),
    ),
    spot,
  }
  const facts: MachineFacts = {
    hostname: name,
    public_ip: str(field('public_ip'), 45),
    gpu_model: remote.gpu_model,
    gpu_count: gpu.count,
    disk_gb: diskGb(specs?.disk),
    port_range_size: null,
  }
  return { externalMachineId: (id !== null ? String(id) : (name ?? '')).slice(0, 128), remote, marketplaceB, facts, reportCount: null }
}

/** Coins in the order their price is taken for a USD asking price: the USD-pegged coin needs no rate. */
const PRICE_COINS = ['USD-Blockchain', 'bitcoin', 'CLORE-Blockchain']

/**
 * A Clore server's asking price in USD micro-dollars per GPU-hour: the on-demand per-day price of
 * the first coin (USD-Blockchain, bitcoin, CLORE-Blockchain) that has both a price and a rate (USD
 * per coin, floored to the micro-dollar as a link's `rates_usd_per_coin` shows it) × that rate ÷ 24
 * ÷ the card count. The one rule for the market's prices and a tenant's own offer, so they compare
 * alike. Null when not derivable.
 */
export function cloreUsdPerGpuHour(onDemandPerDay: (coin: string) => unknown, usdPerCoin: (coin: string) => unknown, gpuCount: number | null): number | null {
  if (gpuCount === null || gpuCount <= 0) return null
  for (const coin of PRICE_COINS) {
    const perDay = parseDecimal(onDemandPerDay(coin))
    const rate = coin === 'USD-Blockchain' ? parseDecimal(1) : parseDecimal(usd(parseDecimal(usdPerCoin(coin))))
    if (!perDay || !rate) continue
    const usdDay = decimalToMicrosFloor({ units: perDay.units * rate.units, scale: perDay.scale + rate.scale })
    if (usdDay !== null) return Math.round(usdDay / 24 / gpuCount)
  }
  return null
}

/** The public `marketplace` servers as asking prices (cloreUsdPerGpuHour) with their GPUs and whether they can be rented now. */
export function cloreMarketOffers(servers: Json[], ratesUsdPerCoin: Json | null): MarketOffer[] {
  return servers.map((s) => {
    const gpu = gpuOf(obj(s.specs), s)
    const onDemand = obj(obj(s.price)?.on_demand)
    const price = cloreUsdPerGpuHour(
      (coin) => onDemand?.[coin],
      (coin) => ratesUsdPerCoin?.[coin],
      gpu.count,
    )
    const id = int(s.id)
    return {
      gpuName: gpu.name,
      gpuModel: normaliseGpuModel(gpu.name),
      gpuCount: gpu.count,
      priceGpuHourMicros: price,
      rentable: s.rented === undefined ? null : s.rented !== true,
      machineId: id === null ? null : String(id),
    }
  })
}
