/** The telemetry module's front door: the metrics routes and the rollup and pruning jobs. */
export { metricsRoutes } from './metrics.routes'
export { pruneTelemetry, runRollups } from './rollup.service'
