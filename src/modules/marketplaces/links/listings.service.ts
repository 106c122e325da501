import type { DbOrTx } from '../../../../db/client'
import type { ServerListing } from '../../fleet'
import { rentalOf } from '../deals/deals.service'
import { linksOf, linksOfServers, linksOnMarketplace, type LinkRow } from './links.repository'
import { ownPriceMicros } from '../market/market.service'

/**
 * Where each server of a tenant is listed or rented now, for its fleet row (docs/fleet.md "Money
 * and health on a row"), from the links' projections the last marketplaces.sync wrote. Only live
 * links count (a stale link's machine is gone from the platform's listing, a conflicting one claims
 * a machine another link claims too). A link is rented when its projection shows running deals (the
 * same deals the accrual counts) or running rentals, listed when the platform says so. A server
 * linked on both platforms shows the one with a running rental, else the one where it is listed,
 * marketplace_a first when both are equal; neither listed nor rented: no entry.
 */
export async function serverListings(db: DbOrTx, tenantId: string): Promise<Map<string, ServerListing>> {
  const out = new Map<string, ServerListing>()
  const rank = (l: ServerListing) => (l.rented ? 2 : 0) + (l.listed ? 1 : 0)
  const links = (await linksOf(db, tenantId)).sort((a, b) => a.marketplace.localeCompare(b.marketplace))
  for (const link of links) {
    const listing = listingOf(link)
    if (!listing) continue
    const held = out.get(link.serverId)
    if (!held || rank(listing) > rank(held)) out.set(link.serverId, listing)
  }
  return out
}

function listingOf(link: LinkRow): ServerListing | null {
  if (link.state !== 'linked') return null
  const { rented, rentedGpus } = rentalOf(link)
  const listed = link.remote.listed === true
  if (!rented && !listed) return null
  return { marketplace: link.marketplace, priceMicros: ownPriceMicros(link), listed, rented, rentedGpus }
}

/** A linked machine as the platform last showed it, for readiness (docs/readiness.md): the link's state and projection. */
export type LinkedMachine = {
  serverId: string
  marketplace: LinkRow['marketplace']
  externalMachineId: string
  state: LinkRow['state']
  /** When the last sync saw the machine in the platform's listing (µs), null when never. */
  lastSeenAt: number | null
  remote: LinkRow['remote']
}

/** Every link of the tenant (or of one server) with the platform's view of its machine. */
export async function linkedMachines(db: DbOrTx, tenantId: string, serverId?: string): Promise<LinkedMachine[]> {
  return (serverId === undefined ? await linksOf(db, tenantId) : await linksOfServers(db, tenantId, [serverId])).map((l) => ({
    serverId: l.serverId,
    marketplace: l.marketplace,
    externalMachineId: l.externalMachineId,
    state: l.state,
    lastSeenAt: l.lastSeenAt,
    remote: l.remote,
  }))
}

/** A linked machine's offer as the platform last showed it, for bulk changes (docs/marketplaces.md "Bulk changes"). */
export type OfferState = {
  serverId: string
  externalMachineId: string
  state: LinkRow['state']
  listed: boolean | null
  priceGpuHour: string | null
  minBidHour: string | null
  /** marketplace_b's per-coin, per-day prices; null on marketplace_a. */
  coinPrices: Record<string, { on_demand: string | null; spot: string | null }> | null
  rentalsRunning: number | null
  /** The offer gpuhq last published and keeps for keep-on (null after a withdrawal). */
  keptOffer: LinkRow['offer']
}

/** The tenant's links on one marketplace with their offers as the last sync (or write) left them. */
export async function offerStates(db: DbOrTx, tenantId: string, marketplace: LinkRow['marketplace']): Promise<OfferState[]> {
  return (await linksOnMarketplace(db, tenantId, marketplace)).map((l) => ({
    serverId: l.serverId,
    externalMachineId: l.externalMachineId,
    state: l.state,
    listed: l.remote.listed,
    priceGpuHour: l.remote.price_gpu_hour,
    minBidHour: l.remote.min_bid_hour,
    coinPrices: l.marketplaceB?.coin_prices ?? null,
    rentalsRunning: l.remote.rentals_running,
    keptOffer: l.offer,
  }))
}
