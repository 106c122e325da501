/**
 * The commands module's front door: its routes, the expiry job, delivery when a rental ends, and
 * what the agent session calls (a session ready or lost, the agent's command.* reports), and the
 * system's own commands (an agent update offered, a watchdog step: `issueSystemCommand`).
 */
export { commandsRoutes } from './commands.routes'
export { announceDeliverable, deliverAcrossInstances, dispatchServer, expireCommands, sessionLost, sessionReady } from './commands.delivery'
export { applyCommandFrame } from './commands.reports'
export { issueSystemCommand, offerAgentUpdate } from './commands.service'
// What a workflow waiting for commands reads and does (the drain: docs/marketplaces.md "Drain").
export { cancelCommandsNotStarted, commandInputErrors, commandOutcomes, commandsAfterRental } from './work.service'
