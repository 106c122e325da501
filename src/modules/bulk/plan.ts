import type { Static } from '@sinclair/typebox'
import type { BulkChange, BulkOffer } from '../../../db/schema/bulk'
import { invalidField } from '../../platform/domain-error'
import { formatMoney, parseMoney, parseMoneyInRange } from '../../platform/money'
import type { MarketplaceId, OfferState } from '../marketplaces'
import { offerPriceRefusal } from '../marketplaces'
import type { BulkBody } from './bulk.model'

/**
 * What a bulk change does to one machine (docs/marketplaces.md "Bulk changes"), from the link's
 * offer as the platform last showed it: the offer before and after, or why it is skipped. The
 * preview, the operation's items and the run (which plans each item again just before sending it)
 * all ask here, so they say the same.
 */

export type Action = Static<typeof BulkBody>['action']
export type Plan =
  | { outcome: 'change'; before: BulkOffer; after: BulkOffer; input: Record<string, unknown> | null }
  | { outcome: 'skip'; before: BulkOffer | null; reason: string }

const A_FIELDS = ['price_gpu_hour', 'min_bid_hour'] as const
const CLORE_COINS = ['bitcoin', 'CLORE-Blockchain', 'USD-Blockchain']

/** The prices of the request, checked against the marketplace and the action (422 with a pointer). */
export function changeOf(input: Static<typeof BulkBody>): BulkChange {
  const a = input.marketplace === 'marketplace_a'
  if (input.action === 'withdraw') {
    for (const f of [...A_FIELDS, 'coin_prices'] as const)
      if (input[f] !== undefined) throw invalidField('bulk', `/${f}`, 'not_allowed', 'a withdrawal takes no prices')
    return {}
  }
  if (a && input.coin_prices !== undefined)
    throw invalidField('bulk', '/coin_prices', 'not_supported_by_marketplace', 'marketplace_a prices in USD per GPU-hour; coin_prices is a marketplace_b field')
  if (!a)
    for (const f of A_FIELDS)
      if (input[f] !== undefined)
        throw invalidField(
          'bulk',
          `/${f}`,
          'not_supported_by_marketplace',
          `marketplace_b prices whole servers per day in coins (coin_prices); ${f} is a marketplace_a field`,
        )
  if (input.action === 'reprice' && a && input.price_gpu_hour === undefined)
    throw invalidField('bulk', '/price_gpu_hour', 'required', 'a reprice on marketplace_a needs price_gpu_hour')
  if (input.action === 'reprice' && !a && input.coin_prices === undefined)
    throw invalidField('bulk', '/coin_prices', 'required', 'a reprice on marketplace_b needs coin_prices')
  for (const f of A_FIELDS) {
    const v = input[f]
    if (v !== undefined && parseMoneyInRange(v) === null) throw invalidField('bulk', `/${f}`, 'too_large', `${f} is out of range`)
  }
  if (!a)
    for (const coin of Object.keys(input.coin_prices ?? {}))
      if (!CLORE_COINS.includes(coin))
        throw invalidField('bulk', `/coin_prices/${coin.slice(0, 32)}`, 'unknown_coin', `marketplace_b prices in ${CLORE_COINS.join(', ')}`)
  const refused = offerPriceRefusal(input.marketplace, input)
  if (refused) throw invalidField('bulk', refused.path, 'too_small', refused.message)
  const change: BulkChange = {}
  if (input.price_gpu_hour !== undefined) change.price_gpu_hour = formatMoney(parseMoney(input.price_gpu_hour))
  if (input.min_bid_hour !== undefined) change.min_bid_hour = formatMoney(parseMoney(input.min_bid_hour))
  if (input.coin_prices !== undefined) change.coin_prices = input.coin_prices
  return change
}

function beforeOf(link: OfferState): BulkOffer {
  return { listed: link.listed, price_gpu_hour: link.priceGpuHour, min_bid_hour: link.minBidHour, coin_prices: link.coinPrices }
}

/** Two decimal texts name the same amount ("0.50" and "0.5"); null only equals null. */
function same(a: string | null | undefined, b: string | null | undefined): boolean {
  if (a == null || b == null) return (a ?? null) === (b ?? null)
  const norm = (v: string) => (v.includes('.') ? v.replace(/0+$/, '').replace(/\.$/, '') : v).replace(/^0+(?=\d)/, '')
  return norm(a) === norm(b)
}

/** The plan for one server; `link` undefined: not linked at the marketplace. */
export function planItem(marketplace: MarketplaceId, action: Action, change: BulkChange, link: OfferState | undefined): Plan {
  if (!link) return { outcome: 'skip', before: null, reason: `not linked at ${marketplace}` }
  const before = beforeOf(link)
  if (link.state !== 'linked')
    return {
      outcome: 'skip',
      before,
      reason: `the link is ${link.state} (${link.state === 'stale' ? 'the platform no longer lists the machine' : 'another link claims the machine'})`,
    }
  if (action === 'withdraw') {
    if (link.listed === false) return { outcome: 'skip', before, reason: 'not listed: nothing to withdraw' }
    return { outcome: 'change', before, after: { ...before, listed: false }, input: null }
  }
  if (action === 'reprice' && link.listed !== true)
    return { outcome: 'skip', before, reason: 'not listed: reprice changes listed offers only (publish lists a machine)' }
  if (action === 'publish' && link.listed === true) return { outcome: 'skip', before, reason: 'already listed (reprice changes its price)' }
  if (marketplace === 'marketplace_a') {
    const kept = (link.keptOffer ?? {}) as Record<string, unknown>
    const keptPrice = typeof kept.price_gpu_hour === 'string' ? kept.price_gpu_hour : undefined
    const keptBid = typeof kept.min_bid_hour === 'string' ? kept.min_bid_hour : undefined
    const price = change.price_gpu_hour ?? keptPrice ?? link.priceGpuHour ?? undefined
    if (price === undefined) return { outcome: 'skip', before, reason: 'no price known for this machine: give price_gpu_hour' }
    const bid = change.min_bid_hour ?? (action === 'publish' ? keptBid : undefined)
    if (action === 'reprice' && same(price, link.priceGpuHour) && (bid === undefined || same(bid, link.minBidHour)))
      return { outcome: 'skip', before, reason: `already at ${link.priceGpuHour} USD per GPU-hour` }
    const input: Record<string, unknown> = { price_gpu_hour: price, ...(bid !== undefined ? { min_bid_hour: bid } : {}) }
    const after: BulkOffer = {
      ...before,
      listed: true,
      price_gpu_hour: formatMoney(parseMoney(price)),
      min_bid_hour: bid !== undefined ? formatMoney(parseMoney(bid)) : before.min_bid_hour,
    }
    return { outcome: 'change', before, after, input }
  }
  const kept = (link.keptOffer ?? {}) as { coin_prices?: BulkChange['coin_prices']; max_rental_hours?: number }
  const coins = change.coin_prices ?? kept.coin_prices
  if (!coins || !Object.keys(coins).length) return { outcome: 'skip', before, reason: 'no price known for this machine: give coin_prices' }
  const current = link.coinPrices ?? {}
  if (
    action === 'reprice' &&
    Object.entries(coins).every(([c, p]) => same(p.on_demand, current[c]?.on_demand) && (p.spot == null || same(p.spot, current[c]?.spot)))
  )
    return { outcome: 'skip', before, reason: 'already at these prices' }
  const next = { ...current }
  for (const [c, p] of Object.entries(coins)) next[c] = { on_demand: p.on_demand, spot: p.spot ?? current[c]?.spot ?? null }
  const input: Record<string, unknown> = {
    coin_prices: coins,
    ...(action === 'publish' && kept.max_rental_hours ? { max_rental_hours: kept.max_rental_hours } : {}),
  }
  return { outcome: 'change', before, after: { ...before, listed: true, coin_prices: next }, input }
}
