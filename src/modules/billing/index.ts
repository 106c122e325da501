/** The billing module's front door: the only file other modules import from it. */
export { adjustBalance, setTenantPlan, upsertPlan } from './admin.service'
export { billingRoutes } from './billing.routes'
export { managedServerCount } from './billing.service'
export { runHourlyCharges } from './charges.service'
export { appendEntry, balanceOf } from './ledger'
