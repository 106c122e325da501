/** The payments module's front door: top-ups and their providers, reconciliation, unsettled payments, and their routes. */
export { paymentsRoutes } from './payments.routes'
export { reconcileTopups } from './reconcile.service'
export { setSandboxSelfUrl } from './sandbox.provider'
export { sandboxRoutes } from './sandbox.routes'
export { tenantOwnsTopup } from './topups.repository'
export { listUnsettledPayments, settleUnsettledPayment } from './unsettled.service'
