/** The prometheus module's front door: GET /metrics/prometheus, the fleet as Prometheus metrics (docs/prometheus.md). */
export { prometheusRoutes } from './prometheus.routes'
