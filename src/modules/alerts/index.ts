/** The alerts module's front door: the /alerts routes, the reactions that open and resolve incidents, and the alerts.evaluate job. */
export { alertsRoutes } from './alerts.routes'
export {
  alertOnAccountState,
  alertOnLowBalance,
  alertOnPayoutGap,
  alertOnPayoutGapCleared,
  alertOnServerEvent,
  alertOnServerEvents,
  alertOnTopup,
} from './alerts.reactions'
export { evaluateAlerts } from './evaluate.service'
// What a fleet row's health reads (the root hands it to fleet).
export { incidentsByServer } from './alerts.service'
