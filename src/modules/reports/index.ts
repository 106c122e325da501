/** The reports module's front door: GET /reports/{report} (utilisation, earnings, spend, margin), cached. */
export { reportsRoutes } from './reports.routes'
