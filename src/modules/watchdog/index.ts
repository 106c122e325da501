/**
 * The watchdog module's front door (docs/watchdog.md): its routes, the `watchdog.evaluate` job and
 * the reaction that keeps what it needs of the server events as they arrive.
 */
export { watchdogRoutes } from './watchdog.routes'
export { evaluateWatchdog } from './evaluate.service'
export { watchdogOnServerEvent, watchdogOnServerEvents } from './watchdog.reactions'
