/**
 * The fleet module's front door. Fleet owns servers, their events, keep-on flags, latest metrics
 * and snapshots, and this process's live agent sessions; groups, commands and agent sit above it.
 */
export { serversRoutes } from './servers.routes'
export { fleetRuntime, type Sample } from './presence'
export { refreshAllSnapshots } from './snapshot.service'
// What the composition root hands in for the rows' marketplace, price, revenue and health.
export { provideRowFacts, type IncidentCounts, type ServerListing } from './row-facts'
export { loadServer, visibleServerId, type ServerMargin } from './servers.service'
export { agentSessions, type LiveSession } from './agent-sessions'
export { recordServerEvent } from './events'
export { noteRentalFact, rentalRunning, rentalSources, setMarketRentals } from './rentals'
// What other modules read of fleet's tables (tokens: the server limit; billing: charges and names).
export {
  countManagedServers,
  countServersInGroup,
  exposedServers,
  firstServerEnrolledAt,
  findServer,
  findServerByAgentToken,
  findServerByFingerprint,
  findServerById,
  insertServer,
  keepOnOf,
  latestGpuMetricsOfTenant,
  latestOfMetric,
  managedServers,
  markFleetDirty,
  presenceTransitionsOf,
  releaseGroup,
  serverNames,
  serversManagedDuring,
  serversOfTenant,
  tenantServersManagedDuring,
  updateServer,
  type ServerRow,
} from './fleet.repository'
