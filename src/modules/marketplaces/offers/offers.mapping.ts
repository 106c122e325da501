import type { Static } from '@sinclair/typebox'
import { invalidField } from '../../../platform/domain-error'
import { formatMoney, MAX_MONEY_MICROS, parseDecimal, parseMoney, parseMoneyInRange } from '../../../platform/money'
import { formatTimestamp, parseTimestamp } from '../../../platform/time'
import type { CloreSettings, MarketplaceBProjection, MarketplaceId, RemoteProjection, VastAsk } from '../adapters/marketplaces.adapter'
import { MarketplaceErrors } from '../marketplaces.errors'
import type { OfferBody } from '../marketplaces.model'

/**
 * An offer as the API takes it (the `remote` projection's names) turned into each platform's exact
 * request (reference 1.3 and 2.3), the warnings the platform implies, and the projection the link
 * shows once the platform accepted it (the next sync confirms it from the listing).
 */

export type OfferInput = Static<typeof OfferBody>
type Warning = { code: 'pending_price_increase' | 'contracts_extended'; message: string }

/** "1 rental runs", "3 rentals run", or an unknown number: the pending-increase warning's words (here and strategy's). */
export function rentalsRunning(n: number | null): string {
  if (n === null) return 'an unknown number of rentals run'
  return n === 1 ? '1 rental runs' : `${n} rentals run`
}

const A_FIELDS = [
  'price_gpu_hour',
  'min_bid_hour',
  'price_storage_gb_month',
  'price_inet_up_tb',
  'price_inet_down_tb',
  'min_gpu_count',
  'end_date',
  'discount_max',
] as const
const B_FIELDS = ['coin_prices', 'max_rental_hours'] as const
const USD_PRICES = ['price_gpu_hour', 'min_bid_hour', 'price_storage_gb_month', 'price_inet_up_tb', 'price_inet_down_tb'] as const
/** The coins Clore prices in (reference 2.3). */
const CLORE_COINS = ['bitcoin', 'CLORE-Blockchain', 'USD-Blockchain'] as const

/** Refuses what the marketplace has no use for, what it needs and is missing, and values out of range. */
export function checkOffer(marketplace: MarketplaceId, input: OfferInput, nowUs: number): void {
  const foreign = marketplace === 'marketplace_a' ? B_FIELDS : A_FIELDS
  for (const field of foreign)
    if (input[field] !== undefined)
      throw MarketplaceErrors.notSupported(
        `/${field}`,
        marketplace === 'marketplace_a'
          ? `marketplace_a prices in USD per GPU-hour; ${field} is a marketplace_b field`
          : `marketplace_b prices whole servers per day in coins (coin_prices, max_rental_hours); ${field} is a marketplace_a field`,
      )
  if (marketplace === 'marketplace_a') {
    if (input.price_gpu_hour === undefined) throw invalidField('marketplaces', '/price_gpu_hour', 'required', 'marketplace_a needs price_gpu_hour')
    for (const field of USD_PRICES) {
      const v = input[field]
      if (v === undefined) continue
      if (v.startsWith('-') && /[1-9]/.test(v)) throw invalidField('marketplaces', `/${field}`, 'too_small', `${field} cannot be negative`)
      if (parseMoneyInRange(v) === null) throw invalidField('marketplaces', `/${field}`, 'too_large', `${field} is at most ${formatMoney(MAX_MONEY_MICROS)}`)
    }
    assertPricesAboveZero(marketplace, input)
    if (input.end_date !== undefined) {
      const end = parseTimestamp(input.end_date)
      if (end === null) throw invalidField('marketplaces', '/end_date', 'format', 'end_date is not an RFC 3339 timestamp')
      if (end <= nowUs) throw invalidField('marketplaces', '/end_date', 'not_in_future', 'end_date must be in the future')
    }
    return
  }
  if (input.coin_prices === undefined)
    throw invalidField('marketplaces', '/coin_prices', 'required', 'marketplace_b needs coin_prices (per-day, per-server prices per coin)')
  for (const coin of Object.keys(input.coin_prices))
    if (!(CLORE_COINS as readonly string[]).includes(coin))
      throw invalidField('marketplaces', `/coin_prices/${coin.slice(0, 32)}`, 'unknown_coin', `marketplace_b prices in ${CLORE_COINS.join(', ')}`)
  assertPricesAboveZero(marketplace, input)
}

/** The prices an offer body may carry, as the API, strategy's suggestions and a kept offer give them. */
type PricedBody = { price_gpu_hour?: string; min_bid_hour?: string; coin_prices?: Record<string, { on_demand: string; spot?: string | null }> }

/**
 * The one check of rental prices every publication passes (docs/marketplaces.md "Prices above
 * zero"): the API's PUT …/offer (and so the AI tool marketplaces.set_offer), accepting a strategy
 * suggestion, keep-on's re-publication, and strategy's own evaluation before it suggests anything.
 * A rental price — marketplace_a's `price_gpu_hour` and `min_bid_hour`, each marketplace_b coin's
 * `on_demand` and `spot` — must be above zero: a zero lists the server for free (marketplace_b
 * takes it). Storage and traffic prices may be zero. Answers the first refusal, or null.
 */
export function offerPriceRefusal(marketplace: MarketplaceId, input: PricedBody): { path: string; message: string } | null {
  const zeroOrLess = (v: string) => {
    const d = parseDecimal(v.startsWith('-') ? v.slice(1) : v)
    return v.startsWith('-') || d === null || d.units === 0n
  }
  const refusal = (path: string, what: string) => ({ path, message: `${what} must be above zero: a price of 0 would rent the server out for free` })
  if (marketplace === 'marketplace_a') {
    for (const field of ['price_gpu_hour', 'min_bid_hour'] as const) {
      const v = input[field]
      if (v !== undefined && zeroOrLess(v)) return refusal(`/${field}`, field)
    }
    return null
  }
  for (const [coin, p] of Object.entries(input.coin_prices ?? {})) {
    if (zeroOrLess(p.on_demand)) return refusal(`/coin_prices/${coin.slice(0, 32)}/on_demand`, `the on-demand price in ${coin}`)
    if (p.spot !== undefined && p.spot !== null && zeroOrLess(p.spot)) return refusal(`/coin_prices/${coin.slice(0, 32)}/spot`, `the spot price in ${coin}`)
  }
  return null
}

/** Throws the 422 of offerPriceRefusal, with its pointer. */
export function assertPricesAboveZero(marketplace: MarketplaceId, input: PricedBody): void {
  const refused = offerPriceRefusal(marketplace, input)
  if (refused) throw invalidField('marketplaces', refused.path, 'too_small', refused.message)
}

/** Micro-dollars ÷ `divisor` as the shortest exact decimal, then a JSON number (Vast reads floats). */
export function usd(micros: number, divisor: 1 | 1000 = 1): number {
  const scale = divisor === 1 ? 6 : 9
  const digits = micros.toString().padStart(scale + 1, '0')
  return Number(`${digits.slice(0, -scale)}.${digits.slice(-scale)}`)
}

/**
 * Vast's `create_asks` body: USD per GPU-hour, per GB-month, per GB (our per-TB ÷ 1000); `min_chunk`
 * always present (Vast answers 400 to a null), keeping the machine's current one when not given;
 * `end_date` in unix seconds. Omitted optional prices are not sent: Vast keeps what it has.
 */
export function vastAsk(machineId: number, input: OfferInput, current: RemoteProjection): VastAsk {
  const ask: VastAsk = { machine: machineId, price_gpu: usd(parseMoney(input.price_gpu_hour!)), min_chunk: input.min_gpu_count ?? current.min_gpu_count ?? 1 }
  if (input.min_bid_hour !== undefined) ask.price_min_bid = usd(parseMoney(input.min_bid_hour))
  if (input.price_storage_gb_month !== undefined) ask.price_disk = usd(parseMoney(input.price_storage_gb_month))
  if (input.price_inet_up_tb !== undefined) ask.price_inetu = usd(parseMoney(input.price_inet_up_tb), 1000)
  if (input.price_inet_down_tb !== undefined) ask.price_inetd = usd(parseMoney(input.price_inet_down_tb), 1000)
  if (input.end_date !== undefined) ask.end_date = parseTimestamp(input.end_date)! / 1_000_000
  if (input.discount_max !== undefined) ask.credit_discount_max = input.discount_max
  return ask
}

/**
 * Clore's `set_server_settings` body in its per-currency form: `availability: true`, per coin
 * `<coin>_on_demand` and `<coin>_spot` (per day, per server), `enabled-<coin>: true`, and
 * `autoprice: {<coin>: false}` so the price given stays pinned in the coin rather than re-pegged to
 * USD by Clore; `mrl` from max_rental_hours.
 */
export function cloreSettings(name: string, input: OfferInput): CloreSettings {
  const settings: CloreSettings = { name, availability: true }
  const autoprice: Record<string, false> = {}
  for (const [coin, price] of Object.entries(input.coin_prices ?? {})) {
    settings[`${coin}_on_demand`] = Number(price.on_demand)
    if (price.spot !== undefined && price.spot !== null) settings[`${coin}_spot`] = Number(price.spot)
    settings[`enabled-${coin}`] = true
    autoprice[coin] = false
  }
  if (Object.keys(autoprice).length) settings.autoprice = autoprice
  if (input.max_rental_hours !== undefined) settings.mrl = input.max_rental_hours
  return settings
}

/**
 * What Vast does and does not say (reference 1.3 "Gotchas"): a price raised while renters run (or
 * while Vast did not say how many run) becomes a pending increase each renter must accept, and
 * their auto-extend stops at the old price meanwhile; an end_date extends running contracts to it.
 */
export function offerWarnings(marketplace: MarketplaceId, input: OfferInput, current: RemoteProjection, extended: number | null): Warning[] {
  if (marketplace !== 'marketplace_a') return []
  const warnings: Warning[] = []
  const raised = USD_PRICES.filter((f) => {
    const next = input[f]
    const before = current[f]
    return next !== undefined && before !== null && parseMoney(next) > parseMoney(before)
  })
  if (raised.length && current.rentals_running !== 0)
    warnings.push({
      code: 'pending_price_increase',
      message: `raised ${raised.join(', ')} while ${rentalsRunning(current.rentals_running)}: each renter gets a pending increase to accept, and their auto-extend stops at the old price until they do`,
    })
  if (input.end_date !== undefined)
    warnings.push({
      code: 'contracts_extended',
      message: `setting end_date also extends running contracts to it${extended === null ? '' : ` (${extended} extended)`}`,
    })
  return warnings
}

const canonical = (v: string | undefined, before: string | null): string | null => (v === undefined ? before : formatMoney(parseMoney(v)))

/** The link's projection once the platform accepted the offer: listed, with the prices sent. */
export function projectOffer(
  marketplace: MarketplaceId,
  input: OfferInput,
  remote: RemoteProjection,
  b: MarketplaceBProjection | null,
  minChunk: number | null,
  nullB: MarketplaceBProjection,
): { remote: RemoteProjection; marketplaceB: MarketplaceBProjection | null } {
  if (marketplace === 'marketplace_a') {
    const end = input.end_date === undefined ? null : parseTimestamp(input.end_date)
    return {
      remote: {
        ...remote,
        listed: true,
        price_gpu_hour: canonical(input.price_gpu_hour, remote.price_gpu_hour),
        min_bid_hour: canonical(input.min_bid_hour, remote.min_bid_hour),
        price_storage_gb_month: canonical(input.price_storage_gb_month, remote.price_storage_gb_month),
        price_inet_up_tb: canonical(input.price_inet_up_tb, remote.price_inet_up_tb),
        price_inet_down_tb: canonical(input.price_inet_down_tb, remote.price_inet_down_tb),
        min_gpu_count: minChunk,
        discount_max: input.discount_max ?? remote.discount_max,
        ...(end !== null ? { end_date: formatTimestamp(end), ask_duration_seconds: null } : {}),
      },
      marketplaceB: null,
    }
  }
  const coins = Object.keys(input.coin_prices ?? {})
  const prices = { ...(b?.coin_prices ?? {}) }
  for (const [coin, p] of Object.entries(input.coin_prices ?? {})) prices[coin] = { on_demand: p.on_demand, spot: p.spot ?? prices[coin]?.spot ?? null }
  const base = b ?? nullB
  return {
    remote: { ...remote, listed: true },
    marketplaceB: {
      ...base,
      coin_prices: prices,
      coins: [...new Set([...(base.coins ?? []), ...coins])],
      fixed_coins: [...new Set([...(base.fixed_coins ?? []), ...coins])],
      max_rental_hours: input.max_rental_hours ?? base.max_rental_hours ?? null,
    },
  }
}
