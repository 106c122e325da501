/**
 * The earnings module's front door: accrual from running deals (the earnings.sample job, and
 * `accruePast` for time before it watched, the demo's history) and GET /marketplaces/earnings.
 */
export { earningsRoutes } from './earnings.routes'
export { accruePast, sampleEarnings } from './sample.service'
export { accruedByServerOn, accruedDays, cutDays, type AccruedDay, type CutDay } from './earnings.service'
