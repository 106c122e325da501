/** The alerts module's front door: the /alerts routes, the reactions that open and resolve incidents, and the alerts.evaluate job. */
export { alertsRoutes } from './alerts.routes'
export { alertOnAccountState, alertOnLowBalance, alertOnServerEvent, alertOnTopup } from './alerts.reactions'
export { evaluateAlerts } from './evaluate.service'
