/**
 * The reconciliation module's front door (docs/marketplaces.md "Payouts reconciled"): per day and
 * machine, gpuhq's accrual beside the platform's figures, the commission and the unexplained gap;
 * the threshold setting; and the reconciliation.evaluate job that reads payouts and wallets and
 * moves the payout_gap alert.
 */
export { reconciliationRoutes } from './reconciliation.routes'
export { evaluateReconciliation } from './evaluate.service'
