import type { Decimal } from '../../platform/money'
import { utcDay } from '../../platform/time'

/**
 * The accrual arithmetic (docs/earnings.md "Accrual"), pure so property tests can drive it over
 * random timelines. One sample covers the interval since the previous one: the deals the sync saw
 * last are taken to run through it up to the cap after that sighting (`knownUntilUs`); time past the
 * cap while deals were known to run is a gap, never guessed into the accrual. An interval crossing
 * midnight UTC is split exactly at midnight. Amounts are integers: coin amounts in units of 10^-12,
 * USD in micro-dollars, time in microseconds; each piece rounds half up once.
 */

/** A running deal as the sync last saw it: per-day price in its currency (null: the platform does not show it). */
export type Deal = { kind: string; currency: string; priceDay: Decimal | null; gpuCount: number | null }

/** One UTC day's share of a sample. */
export type DayDelta = {
  day: string
  /** Rented time accrued (a deal with or without a known price ran). */
  accruedUs: number
  /** Known-running time not accrued: past the cap after the last sighting. */
  gapUs: number
  usdMicros: number
  byCurrency: { currency: string; amount12: bigint; usdMicros: number }[]
}

const DAY_US = 86_400_000_000
const COIN_SCALE = 12
/** Currencies that are dollars: Vast prices in USD; Clore's USD-Blockchain is pegged 1:1. */
const DOLLARS = new Set(['USD', 'USD-Blockchain'])

function divRoundHalfUp(n: bigint, d: bigint): bigint {
  return (n * 2n + d) / (2n * d)
}

/** The coin amount (units of 10^-12) a per-day price earns over `us` microseconds. */
export function amountOver(priceDay: Decimal, us: number): bigint {
  const at12 =
    priceDay.scale <= COIN_SCALE ? priceDay.units * 10n ** BigInt(COIN_SCALE - priceDay.scale) : priceDay.units / 10n ** BigInt(priceDay.scale - COIN_SCALE)
  return divRoundHalfUp(at12 * BigInt(us), BigInt(DAY_US))
}

/** USD micro-dollars of a coin amount at a rate (USD per coin); null when the currency has no rate. */
export function usdOf(currency: string, amount12: bigint, rate: Decimal | undefined): number | null {
  if (DOLLARS.has(currency)) return Number(divRoundHalfUp(amount12, 10n ** BigInt(COIN_SCALE - 6)))
  if (!rate) return null
  return Number(divRoundHalfUp(amount12 * rate.units, 10n ** BigInt(COIN_SCALE - 6 + rate.scale)))
}

/** [fromUs, toUs) cut at each UTC midnight. */
export function splitByDay(fromUs: number, toUs: number): { day: string; fromUs: number; toUs: number }[] {
  const out: { day: string; fromUs: number; toUs: number }[] = []
  let start = fromUs
  while (start < toUs) {
    const midnight = (Math.floor(start / DAY_US) + 1) * DAY_US
    const end = Math.min(midnight, toUs)
    out.push({ day: utcDay(start), fromUs: start, toUs: end })
    start = end
  }
  return out
}

/**
 * One sample: accrues the deals over [fromUs, min(nowUs, knownUntilUs)) and reports the rest of
 * [fromUs, nowUs) as a gap when deals were known to run. Rates are USD per coin at this moment.
 * An empty interval (a rerun for the same period) yields nothing.
 */
export function sampleStep(input: { fromUs: number; nowUs: number; knownUntilUs: number; deals: Deal[]; rates: ReadonlyMap<string, Decimal> }): DayDelta[] {
  const { fromUs, nowUs, deals, rates } = input
  if (nowUs <= fromUs) return []
  const accrueTo = Math.max(fromUs, Math.min(nowUs, input.knownUntilUs))
  const running = deals.length > 0
  const days = new Map<string, DayDelta>()
  const dayOf = (day: string) => {
    let d = days.get(day)
    if (!d) days.set(day, (d = { day, accruedUs: 0, gapUs: 0, usdMicros: 0, byCurrency: [] }))
    return d
  }
  for (const piece of splitByDay(fromUs, nowUs)) dayOf(piece.day)
  if (!running) return [...days.values()]
  for (const piece of splitByDay(fromUs, accrueTo)) {
    const d = dayOf(piece.day)
    const us = piece.toUs - piece.fromUs
    d.accruedUs += us
    for (const deal of deals) {
      if (!deal.priceDay) continue
      const amount12 = amountOver(deal.priceDay, us)
      const usd = usdOf(deal.currency, amount12, rates.get(deal.currency))
      const entry = d.byCurrency.find((c) => c.currency === deal.currency)
      if (entry) {
        entry.amount12 += amount12
        entry.usdMicros += usd ?? 0
      } else d.byCurrency.push({ currency: deal.currency, amount12, usdMicros: usd ?? 0 })
      d.usdMicros += usd ?? 0
    }
  }
  for (const piece of splitByDay(accrueTo, nowUs)) dayOf(piece.day).gapUs += piece.toUs - piece.fromUs
  return [...days.values()]
}

/** A coin amount in units of 10^-12 as a decimal string without trailing zeros ("0.000125"). */
export function formatAmount(amount12: bigint): string {
  const digits = amount12.toString().padStart(COIN_SCALE + 1, '0')
  const text = `${digits.slice(0, -COIN_SCALE)}.${digits.slice(-COIN_SCALE)}`.replace(/0+$/, '').replace(/\.$/, '')
  return text
}
