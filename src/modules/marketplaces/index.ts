/** The marketplaces module's front door: connected accounts, server-to-machine links, the operations log and their routes. */
// Which marketplaces exist (the wire enum every module names them by) and what each one is.
export { describedMarketplaceId, MARKETPLACES, MarketplaceId } from '../../platform/marketplace-id'
export { type DealCurrency, dealCurrencies, defaultDealCurrency } from './adapters/marketplaces.catalogue'
export { marketplacesRoutes } from './accounts/marketplaces.routes'
export { linksRoutes } from './links/links.routes'
export { candidatesRoutes } from './links/candidates.routes'
export { syncMarketplaces } from './operations/sync.service'
export { renterReportsRoutes } from './renter-reports/renter-reports.routes'
export { offersRoutes } from './offers/offers.routes'
export { marketRoutes } from './market/market.routes'
export { maintenanceAnnouncements } from './offers/offers.service'
export { accrualSources, currentRates, platformDayEarnings, type AccrualSource } from './deals/deals.service'
// What a fleet row shows: where each server is listed or rented now, at what price (the root hands it to fleet).
export { serverListings } from './links/listings.service'
// What readiness reads: each link's platform view of its machine (docs/readiness.md).
export { linkedMachines, type LinkedMachine } from './links/listings.service'
// What pricing strategy reads and does (docs/strategy.md).
export { marketOfModel, pricedOffers, type PricedOffer } from './market/pricing.service'
export { quantile, standing } from './market/market.stats'
export { publishOffer } from './offers/offers.service'
export { offerPriceRefusal, rentalsRunning } from './offers/offers.mapping'
// What alerts read: accounts whose key is rejected or whose calls fail, and stale links.
export { accountHealth, staleLinks } from './links/health.repository'
// What a drain does on the platforms (withdraw, announce and cancel a window, relist the kept offer: docs/marketplaces.md "Drain").
// What may keep a server's offers off the market (a drain), registered by the composition root.
export { registerListingHold } from './offers/holds'
export { drainAnnounce, drainCancelWindow, drainRelist, drainTargets, drainWithdraw } from './offers/drain.service'
// What bulk changes read and do (docs/marketplaces.md "Bulk changes"): each link's offer now, and the two writes.
export { offerStates, type OfferState } from './links/listings.service'
export { withdrawOffer } from './offers/offers.service'
// A link's listing settings (docs/marketplaces.md "Rolling end dates", "Idle jobs"); listing profiles apply them per group.
export { listingRoutes } from './listing/listing.routes'
export { setIdleJob, setRollingEndDate } from './listing/listing.service'
export { IdleJobBody, RollingEndDateBody } from './listing/listing.model'
export { OfferBody } from './marketplaces.model'
export { checkOffer } from './offers/offers.mapping'
// What payout reconciliation reads (docs/marketplaces.md "Payouts reconciled").
export { connectedMarketplaces, platformPayouts, platformWallets } from './deals/payouts.service'
