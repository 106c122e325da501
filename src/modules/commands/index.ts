/** The commands module's front door: its routes and the expiry job. */
export { commandsRoutes } from './commands.routes'
export { expireCommands } from './commands.delivery'
