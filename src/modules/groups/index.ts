/** The groups module's front door: its routes, and the group lookup the composition root hands the fleet. */
export { groupsRoutes } from './groups.routes'
export { findGroup } from './groups.repository'
