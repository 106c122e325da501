/** The system module's front door: health, version and the API documentation pages. */
export { docsRoutes } from './docs.routes'
export { systemRoutes } from './system.routes'
