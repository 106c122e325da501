// Marketplace_b simulator: the state a test sets up and how it shows on Clore.ai's wire
// (docs/marketplaces.md "Simulators"). A field left unset is absent from
// every body: never null, never 0.

/** The three coins of the current per-currency form of `set_server_settings`. */
export const COINS = ['bitcoin', 'CLORE-Blockchain', 'USD-Blockchain'] as const

/** Coin → coins per day for the whole server (the legacy `usd` key may appear too). */
type Pricing = Record<string, number>

interface SimSpecs {
  mb?: string
  cpu?: string
  cpus?: string
  ram?: number
  disk?: string
  disk_speed?: number
  gpu?: string
  gpuram?: number
  gpus?: { type?: string; mem?: number; pcie_gen?: number; pcie_width?: number }[]
  net?: { up?: number; down?: number; cc?: string; test_history?: unknown[] }
  pcie_rev?: number
  pcie_width?: number
  pl?: number | number[]
  stock_pl?: number | number[]
  stock_oc?: unknown
  backend_version?: number
}

/** A running or finished order on a server. `renter` is the simulated API key that placed it, if any. */
export interface SimRental {
  id: number
  spot?: boolean
  currency?: string
  price?: number
  mrl?: number
  spend?: number
  ct?: number
  expired?: boolean
  renter?: string
  lastLoweredAt?: number
}

/** A spot bid on a server that is not (or not only) a rental: `spot_marketplace` `market.offers[]`. */
interface SimOffer {
  offer_id: number
  bid: number
  active: boolean
  currency: string
  renter?: string
}

export interface SimServer {
  name: string
  id?: number
  connected?: boolean
  online?: boolean
  initialized?: boolean
  creation_completed?: boolean
  visibility?: 'public' | 'hidden'
  pricing?: Pricing
  min_spot_pricing?: Pricing
  mrl?: number
  allowed_currencies?: string[]
  autoprice?: Record<string, 'usd' | false>
  usd_pricing?: Record<string, { on_demand: number; spot: number }>
  rental_status?: number
  reliability?: number
  rating?: { avg: number; cnt: number }
  cuda_version?: string
  gpu_array?: string[]
  specs?: SimSpecs
  background_job?: { times_updated?: number; image?: string; command?: string; env?: Record<string, string> }
  init_token?: string
  spot_offers?: SimOffer[]
  /** Unset: `rental_status` and `rented` are absent. Set (even to []): both are derived from it. */
  rentals?: SimRental[]
  /** Fields the reference does not document, merged into `my_servers` and `server_config` as given. */
  extra?: Record<string, unknown>
}

export interface SimOwnerInit {
  label: string
  userId?: number
  limit?: number
  wallets?: { name: string; deposit?: string; balance?: number; withdrawal_fee?: number }[]
  /** `poh_balance`; unset means the body carries no `balance`. */
  poh?: {
    items?: Record<string, unknown>[]
    balance: {
      total: number
      free_amount: number
      reward_amount: number
      offers: Record<'rented_amount' | 'rented_on_marketplace_amount' | 'rented_finished_amount' | 'leased_amount' | 'leased_finished_amount', number>
    }
  }
  servers?: SimServer[]
}

export interface SimOwner extends SimOwnerInit {
  servers: SimServer[]
}

type Json = Record<string, unknown>

/** Copies the keys whose value is defined, in the order given. */
function pick(from: object, keys: readonly string[]): Json {
  const out: Json = {}
  for (const k of keys) {
    const v = (from as Json)[k]
    if (v !== undefined) out[k] = structuredClone(v)
  }
  return out
}

function running(s: SimServer): SimRental[] {
  return (s.rentals ?? []).filter((r) => !r.expired)
}

function rentalStatus(s: SimServer): number | undefined {
  if (s.rental_status !== undefined) return s.rental_status
  return s.rentals ? (running(s).length > 0 ? 1 : 0) : undefined
}

const MY_SERVERS_KEYS = ['name', 'connected', 'visibility', 'pricing', 'online', 'min_spot_pricing', 'allowed_currencies', 'init_token', 'specs'] as const

export function myServersEntry(s: SimServer, withId: boolean): Json {
  return { ...(withId ? pick(s, ['id']) : {}), ...pick(s, MY_SERVERS_KEYS), ...structuredClone(s.extra ?? {}) }
}

export function serverConfigBody(s: SimServer): Json {
  const config: Json = {
    ...pick(s, ['name', 'connected', 'visibility', 'pricing']),
    ...pick({ spot_pricing: s.min_spot_pricing }, ['spot_pricing']),
    ...pick(s, ['mrl', 'online', 'initialized', 'id']),
    ...pick({ rental_status: rentalStatus(s) }, ['rental_status']),
    ...pick(s, ['specs', 'background_job']),
    ...pick({ allowed_coins: s.allowed_currencies }, ['allowed_coins']),
    ...pick(s, ['autoprice', 'usd_pricing']),
    ...structuredClone(s.extra ?? {}),
  }
  return { config, ...pick(s, ['creation_completed']) }
}

export function marketplaceEntry(s: SimServer, owner: SimOwner): Json {
  const status = rentalStatus(s)
  const price = pick({ on_demand: s.pricing, spot: s.min_spot_pricing }, ['on_demand', 'spot'])
  return {
    ...pick(s, ['id']),
    ...pick({ owner: owner.userId }, ['owner']),
    ...pick(s, ['mrl']),
    ...(Object.keys(price).length > 0 ? { price } : {}),
    ...(status === undefined ? {} : { rented: status !== 0 }),
    ...pick(s, ['specs', 'reliability', 'rating', 'cuda_version', 'gpu_array']),
    ...pick({ allowed_coins: s.allowed_currencies }, ['allowed_coins']),
  }
}

export function spotMarket(s: SimServer, callerKey: string, rates: Pricing): Json {
  const offers = [
    ...(s.spot_offers ?? []).map((o) => ({ offer_id: o.offer_id, bid: o.bid, active: o.active, my: o.renter === callerKey, currency: o.currency })),
    ...running(s)
      .filter((r) => r.spot)
      .map((r) => ({ offer_id: r.id, ...pick({ bid: r.price }, ['bid']), active: true, my: r.renter === callerKey, ...pick(r, ['currency']) })),
  ]
  const server = pick({ min_pricing: s.min_spot_pricing, mrl: s.mrl, online: s.online, visibility: s.visibility }, [
    'min_pricing',
    'mrl',
    'online',
    'visibility',
  ])
  return { market: { currency_rates_in_usd: { ...rates }, offers, server }, exists: true }
}

export function orderEntry(r: SimRental, s: SimServer): Json {
  return { ...pick(r, ['id', 'price', 'currency', 'mrl', 'spend', 'ct']), ...pick({ si: s.id }, ['si']), ...pick(r, ['spot', 'expired']) }
}
