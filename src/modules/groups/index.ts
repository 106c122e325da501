/** The groups module's front door: its routes. */
export { groupsRoutes } from './groups.routes'
