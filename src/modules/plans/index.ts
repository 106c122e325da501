/** The plans module's front door: the only file other modules import from it. */
export { assignPlan, hourStartOf, plansDuringHour, recordPriceChange } from './plan-history'
export { findPlan, listPlans, planFeatures, type PlanRow } from './plans.repository'
export { planView, plansRoutes } from './plans.routes'
