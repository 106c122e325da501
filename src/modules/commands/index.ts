/**
 * The commands module's front door: its routes, the expiry job, delivery when a rental ends, and
 * what the agent session calls (a session ready or lost, the agent's command.* reports).
 */
export { commandsRoutes } from './commands.routes'
export { announceDeliverable, deliverAcrossInstances, dispatchServer, expireCommands, sessionLost, sessionReady } from './commands.delivery'
export { applyCommandFrame } from './commands.reports'
export { offerAgentUpdate } from './commands.service'
