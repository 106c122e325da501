/** The subscription module's front door: the only file other modules import from it. */
export { fireScheduled } from './subscription.fire'
export { subscriptionRoutes } from './subscription.routes'
export { activateOnTopup, switchPlan } from './subscription.service'
