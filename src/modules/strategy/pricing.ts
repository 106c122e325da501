import { decimalToMicrosFloor, MAX_MONEY_MICROS, parseDecimal } from '../../platform/money'

/**
 * The price a policy sets for one offer (docs/strategy.md "How a price is chosen"), in integer
 * micro-dollars per GPU-hour, with no I/O: the market's price at the target percentile (type-7
 * quantile of the other asking prices of the model), held inside [floor, ceiling], rounded to the
 * step without leaving that band. The floor always wins over the ceiling: a policy never prices
 * below cost. On marketplace_a a raise while renters run can be held (each renter would get a
 * pending increase to accept).
 */

type BoundBy = 'market' | 'floor' | 'ceiling' | 'held_for_renters' | 'no_market'

export type PriceInputs = {
  /** Ascending asking prices of the model, this offer's own price left out. */
  market: number[] | null
  targetPercentile: number
  currentMicros: number | null
  floorMicros: number
  ceilingMicros: number | null
  stepMicros: number
  /** marketplace_a with `raise_while_rented: hold` and renters possibly running (null: the platform did not say). */
  holdRaises: boolean
}

export type PriceChoice = { suggestedMicros: number; marketMicros: number | null; boundBy: BoundBy }

/** The q-quantile of ascending prices by linear interpolation (the market views' rule). */
export type Quantile = (sorted: readonly number[], q: number) => number

export function choosePrice(p: PriceInputs, quantile: Quantile): PriceChoice {
  const marketMicros = p.market && p.market.length > 0 ? quantile(p.market, p.targetPercentile / 100) : null
  let price = marketMicros ?? p.currentMicros ?? p.floorMicros
  let boundBy: BoundBy = marketMicros === null ? 'no_market' : 'market'
  const ceiling = p.ceilingMicros !== null && p.ceilingMicros >= p.floorMicros ? p.ceilingMicros : null
  if (ceiling !== null && price > ceiling) {
    price = ceiling
    boundBy = 'ceiling'
  }
  if (price < p.floorMicros) {
    price = p.floorMicros
    boundBy = 'floor'
  }
  price = roundWithin(price, p.stepMicros, p.floorMicros, ceiling)
  if (p.holdRaises && p.currentMicros !== null && price > p.currentMicros && p.currentMicros >= p.floorMicros) {
    price = p.currentMicros
    boundBy = 'held_for_renters'
  }
  return { suggestedMicros: price, marketMicros, boundBy }
}

/** To the nearest multiple of the step (half up), then one step back inside [floor, ceiling] if rounding left it. */
function roundWithin(price: number, step: number, floor: number, ceiling: number | null): number {
  let r = Math.floor((price + step / 2) / step) * step
  if (r < floor) r += step * Math.ceil((floor - r) / step)
  if (ceiling !== null && r > ceiling) {
    const down = r - step * Math.ceil((r - ceiling) / step)
    // The floor wins: when no multiple of the step fits between floor and ceiling, keep the one above the floor.
    if (down >= floor) r = down
  }
  return r
}

const SCALE = 1_000_000n

/** A non-negative percent given as a decimal string (at most 1000), in millionths of a percent. */
function percentMillionths(percent: string): bigint {
  const d = parseDecimal(percent)
  if (!d) throw new Error(`not a percent: ${percent}`)
  return BigInt(decimalToMicrosFloor(d)!)
}

/** The floor, or why there is none: the platform takes everything, or the price would leave the money range. */
export type Floor = { micros: number } | { refused: 'commission_takes_all' | 'above_money_range' }

/**
 * The lowest price that leaves the owner `marginPercent` above `costMicros` after the platform takes
 * `commissionPercent` of it: cost × (100 + margin) ÷ (100 − commission), rounded up to the micro-dollar,
 * in integers throughout. Refused when the platform takes everything (a 100 % commission: no price
 * covers any cost) or when the floor is above MAX_MONEY_MICROS, the largest amount gpuhq handles.
 */
export function floorOf(costMicros: number, marginPercent: string, commissionPercent: string | null): Floor {
  const hundred = 100n * SCALE
  const up = hundred + percentMillionths(marginPercent)
  const keep = hundred - (commissionPercent === null ? 0n : percentMillionths(commissionPercent))
  if (keep <= 0n) return { refused: 'commission_takes_all' }
  const floor = (BigInt(costMicros) * up + keep - 1n) / keep
  return floor > BigInt(MAX_MONEY_MICROS) ? { refused: 'above_money_range' } : { micros: Number(floor) }
}

/**
 * The parts of one GPU-hour's cost added up in integers; null when a part is not a whole number of
 * micro-dollars (an impossible measurement) or the sum is above MAX_MONEY_MICROS.
 */
export function costOf(parts: readonly (number | null)[]): number | null {
  let sum = 0n
  for (const p of parts) {
    if (p === null) continue
    if (!Number.isSafeInteger(p) || p < 0) return null
    sum += BigInt(p)
  }
  return sum > BigInt(MAX_MONEY_MICROS) ? null : Number(sum)
}

/** Coins with the fraction digits gpuhq sets their prices to. */
export const COIN_DIGITS: Record<string, number> = { bitcoin: 8, 'CLORE-Blockchain': 4, 'USD-Blockchain': 4 }

/**
 * A per-GPU-hour USD price as marketplace_b's per-day, per-server price in a coin: price × GPUs × 24
 * ÷ USD per coin, rounded up to the coin's digits (so the offer never falls below the USD price
 * chosen). Null when the rate is unknown or zero.
 */
export function coinPerDay(microsPerGpuHour: number, gpus: number, usdPerCoin: string | null, digits: number): string | null {
  const rate = usdPerCoin === null ? null : parseDecimal(usdPerCoin)
  if (!rate || rate.units === 0n) return null
  // usdPerDay (micro) / 1e6 / (rate.units / 10^rate.scale) in units of 10^-digits:
  // = usdMicrosPerDay × 10^(rate.scale + digits) / (rate.units × 10^6)
  const usdMicrosPerDay = BigInt(microsPerGpuHour) * BigInt(gpus) * 24n
  const num = usdMicrosPerDay * 10n ** BigInt(rate.scale + digits)
  const den = rate.units * SCALE
  const units = (num + den - 1n) / den
  const s = units.toString().padStart(digits + 1, '0')
  const whole = s.slice(0, -digits)
  const frac = s.slice(-digits).replace(/0+$/, '')
  return frac ? `${whole}.${frac}` : whole
}
