/** The strategy module's front door: pricing policies, their suggestions (the strategy.suggest job) and the preview. */
export { strategyRoutes } from './strategy.routes'
export { suggestPrices } from './suggestions.service'
