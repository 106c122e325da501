/** The console module's front door: the web console's routes, and its bundle (built at start by src/main.ts). */
export { consoleRoutes } from './console.routes'
export { consoleBundle } from './console.build'
