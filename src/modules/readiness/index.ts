/** The readiness module's front door (docs/readiness.md): its routes and the evaluation `alerts.evaluate` runs first. */
export { readinessRoutes } from './readiness.routes'
export { evaluateReadiness } from './readiness.service'
