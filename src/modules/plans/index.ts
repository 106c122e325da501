/** The plans module's front door: the catalogue, each tenant's plan history, and GET /plans. */
export { assignPlan, hourStartOf, plansDuringHour, type PricedPlan } from './plan-history.repository'
export { PLAN_CODE_PATTERN, Plan } from './plans.model'
export { findPlan, listPlans, type PlanRow } from './plans.repository'
export { plansRoutes } from './plans.routes'
export { featuresOfPlan, planView, upsertPlan } from './plans.service'
