/** The billing module's front door: the ledger and balances, hourly charges, and the /billing routes. */
export { adjustBalance } from './admin.service'
export { billingRoutes } from './billing.routes'
export { balanceRunway } from './billing.service'
export { LOW_BALANCE_DAYS, runHourlyCharges } from './charges.service'
export { appendEntry } from './ledger'
export { balanceOf, billableServerHours, chargesPerServerDay, entriesForReport, paymentCredited } from './ledger.repository'
