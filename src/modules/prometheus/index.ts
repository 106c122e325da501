/** The prometheus module's front door: GET /metrics/prometheus, the fleet as Prometheus metrics (docs/prometheus.md). */
export { prometheusRoutes } from './prometheus.routes'
// What bench/prometheus.ts times: one scrape's body, built as the route builds it.
export { scrapeMetrics } from './prometheus.service'
