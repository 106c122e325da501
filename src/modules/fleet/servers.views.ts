import type { DbOrTx } from '../../../db/client'
import * as repo from './fleet.repository'
import type { ServerRow } from './fleet.repository'

/**
 * What other modules see of a server: the fields they read, never the table's row (its credential
 * hash, fingerprint, version and bookkeeping columns stay inside fleet). Reads that hand servers to
 * other modules answer this view; fleet's own verbs keep the row.
 */
export type ServerSummary = Pick<
  ServerRow,
  | 'id'
  | 'tenantId'
  | 'name'
  | 'groupId'
  | 'presence'
  | 'createdAt'
  | 'decommissionedAt'
  // The host and its GPUs as the agent reported them (marketplace candidates, reports, strategy).
  | 'hostname'
  | 'publicIp'
  | 'diskGb'
  | 'portRange'
  | 'gpus'
  | 'gpuCount'
  | 'gpuModel'
  // The host beside its GPUs and when the agent last said so (readiness: docs/readiness.md).
  | 'hostDetails'
  | 'lastHelloAt'
  // The operator's tariff (costs, margins).
  | 'electricityMicrosPerKwh'
  // The rental facts (commands' `requires`: rentalRunning).
  | 'rentalActive'
  | 'rentalSource'
  | 'marketRentals'
>

/** The summary of a row: a new object with the view's fields only. */
export function summaryOf(r: ServerRow): ServerSummary {
  return {
    id: r.id,
    tenantId: r.tenantId,
    name: r.name,
    groupId: r.groupId,
    presence: r.presence,
    createdAt: r.createdAt,
    decommissionedAt: r.decommissionedAt,
    hostname: r.hostname,
    publicIp: r.publicIp,
    diskGb: r.diskGb,
    portRange: r.portRange,
    gpus: r.gpus,
    gpuCount: r.gpuCount,
    gpuModel: r.gpuModel,
    hostDetails: r.hostDetails,
    lastHelloAt: r.lastHelloAt,
    electricityMicrosPerKwh: r.electricityMicrosPerKwh,
    rentalActive: r.rentalActive,
    rentalSource: r.rentalSource,
    marketRentals: r.marketRentals,
  }
}

const summary = (r: ServerRow | undefined) => (r === undefined ? undefined : summaryOf(r))

/**
 * A server of this tenant (decommissioned ones included: they keep their history), or undefined.
 * Tenant-checked without an actor, for verbs that answer their own refusal (a token's or a
 * policy's). Behind an actor, `loadServer` is the one that throws the plain 404.
 */
export async function serverOfTenant(db: DbOrTx, tenantId: string, id: string): Promise<ServerSummary | undefined> {
  return summary(await repo.findServer(db, tenantId, id))
}

/**
 * A server by id alone, NOT tenant-checked: only for an id that comes from a trusted source (a live
 * agent session, a job's or an event's own server id), never for an id a request carried.
 */
export async function trustedServerById(db: DbOrTx, id: string): Promise<ServerSummary | undefined> {
  return summary(await repo.findServerById(db, id))
}

/** The managed (not decommissioned) server whose agent credential hashes to this, or undefined. */
export async function serverByAgentToken(db: DbOrTx, tokenHash: string): Promise<ServerSummary | undefined> {
  return summary(await repo.findServerByAgentToken(db, tokenHash))
}

/** The managed server of an agent credential's hash, id and tenant only (the WebSocket upgrade's one statement). */
export async function agentOfTokenHash(db: DbOrTx, tokenHash: string): Promise<{ id: string; tenantId: string } | undefined> {
  return await repo.findAgentByTokenHash(db, tokenHash)
}

/** The tenant's managed server with this host fingerprint (what re-enrolment matches), or undefined. */
export async function serverByFingerprint(db: DbOrTx, tenantId: string, fingerprint: string): Promise<ServerSummary | undefined> {
  return summary(await repo.findServerByFingerprint(db, tenantId, fingerprint))
}

/** The tenant's managed (not decommissioned) servers, by name. */
export async function managedServers(db: DbOrTx, tenantId: string): Promise<ServerSummary[]> {
  return (await repo.managedServers(db, tenantId)).map(summaryOf)
}

/** Every server of the tenant, decommissioned ones too (they keep their history), by name. */
export async function serversOfTenant(db: DbOrTx, tenantId: string): Promise<ServerSummary[]> {
  return (await repo.serversOfTenant(db, tenantId)).map(summaryOf)
}

// Named reads that already answer narrow views (counts, names, ids, readings): other modules'
// figures. Fleet's writes are never listed here; they are the verbs of the services.
export {
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
  presenceTransitionsOf,
  serverNameById,
  serverNamesByIds,
  serverNames,
  tenantServersManagedDuring,
  xidCountsOfServer,
  xidCountsOfTenant,
} from './fleet.repository'
