/** The marketplaces module's front door: connected accounts, the operations log and their routes. */
export { marketplacesRoutes } from './marketplaces.routes'
export { candidatesRoutes } from './candidates.routes'
