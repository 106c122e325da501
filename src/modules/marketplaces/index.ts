/** The marketplaces module's front door: connected accounts, server-to-machine links, the operations log and their routes. */
export { marketplacesRoutes } from './marketplaces.routes'
export { linksRoutes } from './links.routes'
export { candidatesRoutes } from './candidates.routes'
export { syncMarketplaces } from './sync.service'
export { offersRoutes } from './offers.routes'
export { marketRoutes } from './market.routes'
export { maintenanceAnnouncements } from './offers.service'
export { accrualSources, currentRates, platformDayEarnings, type AccrualSource } from './deals.service'
// What a fleet row shows: where each server is listed or rented now, at what price (the root hands it to fleet).
export { serverListings } from './listings.service'
// What pricing strategy reads and does (docs/strategy.md).
export { marketOfModel, pricedOffers, type PricedOffer } from './pricing.service'
export { quantile, standing } from './market.stats'
export { publishOffer } from './offers.service'
export { offerPriceRefusal } from './offers.mapping'
// What alerts read: accounts whose key is rejected or whose calls fail, and stale links.
export { accountHealth, staleLinks } from './health.repository'
