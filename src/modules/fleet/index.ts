/**
 * The fleet module's front door: verbs and views, never its repository (its writes stay behind
 * the verbs; .dependency-cruiser.cjs "front-doors-hand-out-no-repository"). Fleet owns servers,
 * their events, keep-on flags, latest metrics and snapshots, and this process's live agent
 * sessions; groups, commands and agent sit above it. Other modules see a server as a
 * `ServerSummary`, never as the table's row.
 */
export { serversRoutes } from './servers.routes'
export { fleetRuntime, type Sample } from './presence'
export { markFleetDirty, refreshAllSnapshots } from './snapshot.service'
// What the composition root hands in for the rows' marketplace, price, revenue and health.
export { provideRowFacts, type IncidentCounts, type ServerListing } from './row-facts'
// Reading one server: the tenant-checked load-or-throw (a plain 404), and the group's release.
export { loadServer, releaseGroup, visibleServerId, type ServerMargin } from './servers.service'
// Keep-on per marketplace, as listing profiles set it for a group's servers (docs/marketplaces.md "Listing profiles").
export { setKeepOn } from './servers.service'
export { agentSessions, type LiveSession } from './agent-sessions'
export { recordServerEvent } from './events'
// The hardware rules GET /servers/{id} and Prometheus share (docs/agent.md "Health readings").
export { pcieLinkDegraded } from './hardware'
export { rentalRunning, rentalSources, setMarketRentals } from './rentals'
// What an agent tells about its host (the agent module decides, fleet writes).
export { backdateEnrolment, enrolServer, recordHostFacts, recordRentalSighting, reenrolServer, type HostFacts } from './enrolment.service'
// What other modules read of fleet's tables, as views (tokens: the server limit; billing: charges and names; …).
export {
  agentOfTokenHash,
  countManagedServers,
  countServersInGroup,
  exposedServers,
  firstServerEnrolledAt,
  keepOnOf,
  latestGpuMetricsOf,
  LATEST_SLICE,
  latestMetricsOf,
  latestOfMetric,
  managedServersByTenant,
  managedServers,
  presenceTransitionsOf,
  serverByAgentToken,
  serverByFingerprint,
  serverNameById,
  serverNamesByIds,
  serverNames,
  serverOfTenant,
  serversOfTenant,
  tenantServersManagedDuring,
  trustedServerById,
  xidCountsOfServer,
  xidCountsOfTenant,
  type ServerSummary,
} from './servers.views'
