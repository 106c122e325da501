/** The payments module's front door: the only file other modules import from it. */
export { paymentsRoutes } from './payments.routes'
export { reconcileTopups } from './reconcile.service'
export { setSandboxSelfUrl } from './sandbox.provider'
export { sandboxRoutes } from './sandbox.routes'
export { listUnsettledPayments, settleUnsettledPayment } from './unsettled.service'
