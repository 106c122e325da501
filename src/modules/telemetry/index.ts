/**
 * The telemetry module's front door: the metrics routes, the rollup and pruning jobs, and what the
 * fleet's group commit and the agent session use to store samples and cap metric names.
 */
export { metricsRoutes } from './metrics.routes'
export { pruneTelemetry, runRollups, settledHourlyUntil } from './rollup.service'
export { MAX_METRIC_NAMES_PER_SERVER, metricNames, seriesCache, storeSamples, type SeriesKey, type TelemetrySample } from './ingest'
export { inMetricRange, metricRange, plausibleReading } from './bounds'
export { averageGpuPowerW, gpuMetricByServerDay, noteLateSamples, type GpuDay } from './telemetry.repository'
