/** The fleet module's front door: the servers routes, the presence runtime the jobs and the root start and stop, the snapshot job. */
export { serversRoutes } from './servers.routes'
export { fleetRuntime } from './presence'
export { refreshAllSnapshots } from './snapshot.service'
