/** The readiness module's front door (docs/readiness.md): its routes and the evaluation (the readiness.evaluate job). */
export { readinessRoutes } from './readiness.routes'
export { evaluateReadiness } from './readiness.service'
