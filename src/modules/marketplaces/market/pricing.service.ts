import type { Deps } from '../../../platform/context'
import { linksOnMarketplace } from '../links/links.repository'
import { snapshotAt, snapshotTimeAt } from './market.repository'
import { ownPriceMicros } from './market.service'
import type { MarketplaceId } from '../adapters/marketplaces.adapter'

/**
 * What pricing strategy reads of the marketplaces (docs/strategy.md): the tenant's listed offers on
 * one marketplace with their current price in USD per GPU-hour (the market views' own rule), and
 * the asking prices of one model in the latest market snapshot.
 */

export type PricedOffer = {
  serverId: string
  marketplace: MarketplaceId
  gpuModel: string | null
  gpuCount: number | null
  /** USD micro-dollars per GPU-hour; null when the platform shows no price. */
  currentMicros: number | null
  /** null: the platform did not say (marketplace_b never does per machine). */
  rentalsRunning: number | null
  /** marketplace_b: the per-day, per-server on-demand price of each coin the server is priced in. */
  coinPrices: Record<string, string>
  /** marketplace_b: USD per coin as the platform last showed them with this server. */
  ratesUsdPerCoin: Record<string, string>
}

/** The tenant's offers on the marketplace that are listed now through a live link (stale and conflicting links are left out). */
export async function pricedOffers(deps: Deps, tenantId: string, marketplace: MarketplaceId): Promise<PricedOffer[]> {
  return (await linksOnMarketplace(deps.db, tenantId, marketplace))
    .filter((l) => l.state === 'linked' && l.remote.listed === true)
    .map((l) => ({
      serverId: l.serverId,
      marketplace,
      gpuModel: l.remote.gpu_model,
      gpuCount: l.remote.gpu_count,
      currentMicros: ownPriceMicros(l),
      rentalsRunning: l.remote.rentals_running,
      coinPrices: Object.fromEntries(
        Object.entries(l.marketplaceB?.coin_prices ?? {}).flatMap(([coin, p]) => (p.on_demand === null ? [] : [[coin, p.on_demand] as const])),
      ),
      ratesUsdPerCoin: { ...(l.marketplaceB?.spot?.rates_usd_per_coin ?? {}) },
    }))
}

/** The asking prices (ascending micro-dollars per GPU-hour) of one model in the marketplace's latest snapshot; null when it lists none. */
export async function marketOfModel(deps: Deps, marketplace: MarketplaceId, gpuModel: string): Promise<{ takenAt: number; prices: number[] } | null> {
  const at = await snapshotTimeAt(deps.db, marketplace, deps.clock.nowUs())
  if (at === null) return null
  const row = (await snapshotAt(deps.db, marketplace, at)).find((r) => r.gpuModel === gpuModel)
  return row ? { takenAt: at, prices: [...row.prices].sort((a, b) => a - b) } : null
}
