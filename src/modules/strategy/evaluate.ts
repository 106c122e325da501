import type { Deps } from '../../platform/context'
import { formatMoney, formatNullableMoney, MAX_MONEY_MICROS } from '../../platform/money'
import { formatNullableTimestamp, utcDay } from '../../platform/time'
import { gpuHourCosts } from '../costs'
import { accruedDays } from '../earnings'
import type { ServerSummary } from '../fleet'
import { marketOfModel, offerPriceRefusal, pricedOffers, type PricedOffer, quantile, rentalsRunning, standing } from '../marketplaces'
import { COIN_DIGITS, choosePrice, coinPerDay, costOf, floorOf } from './pricing'
import type { PolicyRow } from './strategy.repository'

/**
 * A policy applied to the tenant's offers now (docs/strategy.md): which listed offers it targets,
 * and for each the price it would set, why, and the expected change in earnings. Pure reads: the
 * suggest job stores what this answers, the preview returns it.
 */

const DAY_US = 86_400_000_000
const OCCUPANCY_DAYS = 7
const USD = 'USD-Blockchain'

export type Evaluation = {
  server_id: string
  marketplace: PolicyRow['marketplace']
  gpu_model: string
  gpu_count: number
  current_price_gpu_hour: string | null
  suggested_price_gpu_hour: string
  change: 'raise' | 'lower' | 'none'
  bound_by: 'market' | 'floor' | 'ceiling' | 'held_for_renters' | 'no_market'
  market: { offers: number; taken_at: string | null; target_percentile: number; price_at_percentile: string | null; suggested_percentile: number | null }
  floor: {
    price_gpu_hour: string
    cost_gpu_hour: string
    electricity_gpu_hour: string | null
    operational_gpu_hour: string | null
    gpuhq_charge_gpu_hour: string | null
    commission_percent: string | null
    min_margin_percent: string
    estimate: boolean
    missing: string[]
  }
  ceiling_gpu_hour: string | null
  occupancy: number | null
  expected_change_usd_day: string | null
  offer: { price_gpu_hour?: string; coin_prices?: Record<string, { on_demand: string }> }
  reasons: string[]
  warnings: { code: 'pending_price_increase' | 'lowering_limited' | 'floor_above_ceiling' | 'estimated_floor'; message: string }[]
}

export type Outcome = {
  items: { evaluation: Evaluation; currentMicros: number | null; suggestedMicros: number }[]
  skipped: { server_id: string; reason: string }[]
}

/** Whether the policy's target covers an offer (its marketplace aside): the servers named, the group's, or the GPU model's. */
function coverage(policy: PolicyRow, servers: ServerSummary[]): (o: PricedOffer) => boolean {
  const t = policy.target
  if (t.kind === 'gpu_model') return (o) => o.gpuModel === t.gpuModel
  const ids = new Set(
    t.kind === 'servers' ? t.serverIds.filter((id) => servers.some((s) => s.id === id)) : servers.filter((s) => s.groupId === t.groupId).map((s) => s.id),
  )
  return (o) => ids.has(o.serverId)
}

/** Specificity of a target: named servers beat a group, a group beats a GPU model. */
const rank = (p: PolicyRow) => (p.target.kind === 'servers' ? 0 : p.target.kind === 'group' ? 1 : 2)

/**
 * Which policy prices each offer when several target it: the most specific (servers, then group,
 * then GPU model), then the oldest. Only enabled policies take part.
 */
export function winningPolicies(policies: PolicyRow[], servers: ServerSummary[], offers: PricedOffer[]): Map<string, PolicyRow> {
  const out = new Map<string, PolicyRow>()
  const ordered = policies
    .filter((p) => p.enabled)
    .sort((a, b) => rank(a) - rank(b) || a.createdAt - b.createdAt || a.id.localeCompare(b.id))
    .map((p) => ({ p, covers: coverage(p, servers) }))
  for (const o of offers) {
    const winner = ordered.find(({ p, covers }) => p.marketplace === o.marketplace && covers(o))
    if (winner) out.set(`${o.serverId}|${o.marketplace}`, winner.p)
  }
  return out
}

/** The offers of the marketplace the policy targets (whatever other policies say). */
export async function offersOf(deps: Deps, policy: PolicyRow, servers: ServerSummary[]): Promise<PricedOffer[]> {
  return (await pricedOffers(deps, policy.tenantId, policy.marketplace)).filter(coverage(policy, servers))
}

export async function evaluatePolicy(deps: Deps, policy: PolicyRow, planCode: string | null, offers: PricedOffer[]): Promise<Outcome> {
  const out: Outcome = { items: [], skipped: [] }
  const now = deps.clock.nowUs()
  const earned = await accruedDays(deps, policy.tenantId, utcDay(now - OCCUPANCY_DAYS * DAY_US), utcDay(now))
  const costsOf = await gpuHourCosts(deps, { tenantId: policy.tenantId, planCode })
  for (const o of offers) {
    if (o.gpuModel === null) out.skipped.push({ server_id: o.serverId, reason: 'the marketplace shows no GPU model for the machine' })
    else if (o.gpuCount === null || o.gpuCount <= 0) out.skipped.push({ server_id: o.serverId, reason: 'the marketplace shows no GPU count for the machine' })
    else {
      const earnedMicros = earned.filter((r) => r.serverId === o.serverId && r.marketplace === o.marketplace).reduce((n, r) => n + r.accruedUsdMicros, 0)
      const item = await evaluateOffer(deps, policy, costsOf, { ...o, gpuModel: o.gpuModel, gpuCount: o.gpuCount }, earnedMicros)
      if (typeof item === 'string') out.skipped.push({ server_id: o.serverId, reason: item })
      else out.items.push(item)
    }
  }
  return out
}

type KnownOffer = PricedOffer & { gpuModel: string; gpuCount: number }

/** The coins a marketplace_b offer is priced in (its own, else the policy's), each with its rate. */
function coinsOf(policy: PolicyRow, o: PricedOffer): string[] {
  if (policy.marketplace === 'marketplace_a') return ['USD']
  const own = Object.keys(o.coinPrices).sort()
  return own.length > 0 ? own : [policy.coin ?? USD]
}

async function evaluateOffer(
  deps: Deps,
  policy: PolicyRow,
  costsOf: Awaited<ReturnType<typeof gpuHourCosts>>,
  o: KnownOffer,
  earnedMicros: number,
): Promise<Outcome['items'][number] | string> {
  const coins = coinsOf(policy, o)
  const costs = await costsOf({ serverId: o.serverId, marketplace: policy.marketplace, currencies: coins, gpus: o.gpuCount })
  const costMicros = costOf([costs.electricityMicros, costs.operationalMicros, costs.gpuhqMicros])
  if (costMicros === null)
    return `the costs of one GPU-hour are above ${formatMoney(MAX_MONEY_MICROS)} USD, the largest amount gpuhq handles: check the cost basis`
  const floor = floorOf(costMicros, policy.minMarginPercent, costs.commissionPercent)
  if ('refused' in floor)
    return floor.refused === 'commission_takes_all'
      ? `the commission entered for ${policy.marketplace} is ${costs.commissionPercent} %: no price covers the costs`
      : `the floor (costs × (100 + ${policy.minMarginPercent} % margin) ÷ (100 − ${costs.commissionPercent} % commission)) is above ${formatMoney(MAX_MONEY_MICROS)} USD per GPU-hour, the largest price gpuhq handles: check the cost basis`
  const floorMicros = floor.micros
  const market = await marketOfModel(deps, policy.marketplace, o.gpuModel)
  // The market without this offer's own ask: a price is not set against itself.
  const others = market ? withoutOne(market.prices, o.currentMicros) : null
  const choice = choosePrice(
    {
      market: others,
      targetPercentile: policy.targetPercentile,
      currentMicros: o.currentMicros,
      floorMicros,
      ceilingMicros: policy.ceilingMicros,
      stepMicros: policy.roundingStepMicros,
      holdRaises: policy.marketplace === 'marketplace_a' && policy.raiseWhileRented === 'hold' && o.rentalsRunning !== 0,
    },
    quantile,
  )
  const suggested = choice.suggestedMicros
  if (suggested <= 0)
    return `the price would be ${formatMoney(suggested)}: with no cost known the floor is zero and the market rounds to nothing at a step of ${formatMoney(policy.roundingStepMicros)}; enter the cost basis or a smaller rounding_step`
  const offer = offerBody(policy, o, coins, suggested)
  if (typeof offer === 'string') return offer
  // The same check every publication passes (API, accept, AI tools, keep-on): no price of zero, on any platform.
  const refused = offerPriceRefusal(policy.marketplace, offer)
  if (refused) return `the offer would be refused: ${refused.message}`
  const current = o.currentMicros
  const change = current === null || suggested > current ? 'raise' : suggested < current ? 'lower' : 'none'
  const capacity = current === null ? 0 : current * o.gpuCount * 24 * OCCUPANCY_DAYS
  const occupancy = capacity > 0 ? Math.min(1, Math.round((1000 * earnedMicros) / capacity) / 1000) : null
  const expected = current === null || occupancy === null ? null : expectedChange(suggested - current, o.gpuCount, occupancy)
  const warnings: Evaluation['warnings'] = []
  if (policy.ceilingMicros !== null && floorMicros > policy.ceilingMicros)
    warnings.push({
      code: 'floor_above_ceiling',
      message: `the floor ${formatMoney(floorMicros)} is above the ceiling ${formatMoney(policy.ceilingMicros)}: the floor wins`,
    })
  if (costs.missing.length) warnings.push({ code: 'estimated_floor', message: `the floor leaves out what is not known: ${costs.missing.join(', ')}` })
  if (policy.marketplace === 'marketplace_a' && change === 'raise' && o.rentalsRunning !== 0 && current !== null)
    warnings.push({
      code: 'pending_price_increase',
      message: `raising while ${rentalsRunning(o.rentalsRunning)}: each renter gets a pending increase to accept, and their auto-extend stops at the old price until they do`,
    })
  if (policy.marketplace === 'marketplace_b' && change === 'lower')
    warnings.push({ code: 'lowering_limited', message: 'marketplace_b lets a price be lowered once per 600 seconds; accepting inside that window is refused' })
  return {
    currentMicros: current,
    suggestedMicros: suggested,
    evaluation: {
      server_id: o.serverId,
      marketplace: policy.marketplace,
      gpu_model: o.gpuModel,
      gpu_count: o.gpuCount,
      current_price_gpu_hour: formatNullableMoney(current),
      suggested_price_gpu_hour: formatMoney(suggested),
      change,
      bound_by: choice.boundBy,
      market: {
        offers: others?.length ?? 0,
        taken_at: formatNullableTimestamp(market?.takenAt ?? null),
        target_percentile: policy.targetPercentile,
        price_at_percentile: formatNullableMoney(choice.marketMicros),
        suggested_percentile: others && others.length > 0 ? standing(suggested, others).percentile : null,
      },
      floor: {
        price_gpu_hour: formatMoney(floorMicros),
        cost_gpu_hour: formatMoney(costMicros),
        electricity_gpu_hour: formatNullableMoney(costs.electricityMicros),
        operational_gpu_hour: formatNullableMoney(costs.operationalMicros),
        gpuhq_charge_gpu_hour: formatNullableMoney(costs.gpuhqMicros),
        commission_percent: costs.commissionPercent,
        min_margin_percent: policy.minMarginPercent,
        estimate: costs.missing.length > 0,
        missing: costs.missing,
      },
      ceiling_gpu_hour: formatNullableMoney(policy.ceilingMicros),
      occupancy,
      expected_change_usd_day: formatNullableMoney(expected),
      offer,
      reasons: reasonsOf(choice.boundBy, policy, choice.marketMicros, floorMicros, suggested, current),
      warnings,
    },
  }
}

/** `sorted` without one occurrence of `own` (when present). */
function withoutOne(sorted: number[], own: number | null): number[] {
  if (own === null) return sorted
  const i = sorted.indexOf(own)
  return i < 0 ? sorted : [...sorted.slice(0, i), ...sorted.slice(i + 1)]
}

/** (suggested − current) × GPUs × 24 × occupancy, in integers; null when it would leave the money range. */
function expectedChange(deltaMicros: number, gpus: number, occupancy: number): number | null {
  const perMille = BigInt(Math.round(occupancy * 1000))
  const n = BigInt(deltaMicros) * BigInt(gpus) * 24n * perMille
  // Half up, as Math.round does: floor((n + 500) ÷ 1000).
  const shifted = n + 500n
  const rounded = shifted / 1000n - (shifted % 1000n < 0n ? 1n : 0n)
  const limit = BigInt(MAX_MONEY_MICROS)
  return rounded > limit || rounded < -limit ? null : Number(rounded)
}

/** The body accept publishes: USD per GPU-hour on marketplace_a; per-day, per-server coin prices on marketplace_b. */
function offerBody(policy: PolicyRow, o: KnownOffer, coins: string[], micros: number): Evaluation['offer'] | string {
  if (policy.marketplace === 'marketplace_a') return { price_gpu_hour: formatMoney(micros) }
  const prices: Record<string, { on_demand: string }> = {}
  for (const coin of coins) {
    const rate = coin === USD ? '1' : (o.ratesUsdPerCoin[coin] ?? null)
    const amount = coinPerDay(micros, o.gpuCount, rate, COIN_DIGITS[coin] ?? 8)
    if (amount === null) return `no exchange rate known for ${coin}: the next marketplaces.sync reads one`
    prices[coin] = { on_demand: amount }
  }
  return { coin_prices: prices }
}

function reasonsOf(boundBy: Evaluation['bound_by'], p: PolicyRow, market: number | null, floor: number, suggested: number, current: number | null): string[] {
  const m = (n: number) => formatMoney(n)
  const out: string[] = []
  if (market !== null) out.push(`the market's ${p.targetPercentile}th percentile is ${m(market)} USD per GPU-hour`)
  else out.push('the market lists no other offer of this model: the current price is kept inside floor and ceiling')
  out.push(`the floor is ${m(floor)} (costs plus ${p.minMarginPercent} % margin, after the platform's cut)`)
  if (boundBy === 'floor') out.push('the floor holds the price up')
  if (boundBy === 'ceiling') out.push(`the ceiling ${m(p.ceilingMicros!)} holds the price down`)
  if (boundBy === 'held_for_renters') out.push('a raise is held while renters run (raise_while_rented: hold)')
  out.push(current === null ? `suggested ${m(suggested)}` : `suggested ${m(suggested)} against ${m(current)} now`)
  return out
}
