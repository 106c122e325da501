/** The subscription module's front door: plan changes, their scheduled firing, the top-up reaction and the operator's plan. */
export { setTenantPlan } from './subscription.admin'
export { fireScheduled } from './subscription.fire'
export { subscriptionRoutes } from './subscription.routes'
export { activateOnTopup } from './subscription.service'
