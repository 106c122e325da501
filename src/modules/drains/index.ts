/**
 * The drains module's front door (docs/marketplaces.md "Drain"): its routes, the `drains.advance`
 * job and the reaction that moves a drain on when its server's rental ends.
 */
export { drainsRoutes } from './drains.routes'
export { advanceDrains, advanceServerDrains } from './steps.service'
export { drainHold } from './drains.service'
