/** The earnings module's front door: accrual from running deals (the earnings.sample job) and GET /marketplaces/earnings. */
export { earningsRoutes } from './earnings.routes'
export { sampleEarnings } from './sample.service'
export { accruedDays, type AccruedDay } from './earnings.service'
