import type { DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { insertServer, markSnapshotDirty, updateServer, type ServerRow } from './fleet.repository'
import { noteRentalFact } from './rentals'
import { trustedServerById } from './servers.views'

/**
 * Fleet's verbs for what an agent tells about its host (docs/fleet.md "Enrolment", "The session"):
 * the agent module decides who may enrol and answers the agent; the server rows are written here.
 * Each verb runs in the caller's transaction and marks the tenant's fleet snapshot out of date.
 */

/** The host facts an agent reports at enrolment and in every hello (agent.service `hostFacts`). */
export type HostFacts = Pick<
  ServerRow,
  'hostname' | 'agentVersion' | 'fingerprint' | 'publicIp' | 'diskGb' | 'portRange' | 'gpus' | 'gpuCount' | 'gpuModel' | 'hostDetails'
>

/** A new server of the tenant, enrolled at `at` with the agent's credential hash; answers its id. */
export async function enrolServer(
  tx: DbOrTx,
  deps: Pick<Deps, 'newId'>,
  e: { tenantId: string; name: string; facts: HostFacts; agentTokenHash: string; at: number },
): Promise<string> {
  const id = deps.newId()
  await insertServer(tx, { id, tenantId: e.tenantId, name: e.name, createdAt: e.at, ...e.facts, agentTokenHash: e.agentTokenHash, enrolledAt: e.at })
  await markSnapshotDirty(tx, e.tenantId)
  return id
}

/** An existing server enrolled again at `at`: its facts refreshed and its agent credential replaced. */
export async function reenrolServer(
  tx: DbOrTx,
  server: { id: string; tenantId: string },
  e: { facts: HostFacts; agentTokenHash: string; at: number },
): Promise<void> {
  await updateServer(tx, server.id, { ...e.facts, agentTokenHash: e.agentTokenHash, enrolledAt: e.at })
  await markSnapshotDirty(tx, server.tenantId)
}

/** The facts an agent's hello reported at `at` (POST /agent/hello). */
export async function recordHostFacts(tx: DbOrTx, server: { id: string; tenantId: string }, facts: HostFacts, at: number): Promise<void> {
  await updateServer(tx, server.id, { ...facts, lastHelloAt: at })
  await markSnapshotDirty(tx, server.tenantId)
}

/**
 * The agent saw a rental start or end on its host (a `rental.*` event of its live session): the
 * server's rental fact becomes the agent's, and `server.rental_changed` is emitted when that
 * changes it. The id is the live session's, a trusted one.
 */
export async function recordRentalSighting(tx: DbOrTx, deps: Pick<Deps, 'events' | 'clock'>, serverId: string, active: boolean): Promise<void> {
  const server = await trustedServerById(tx, serverId)
  if (server) await noteRentalFact(tx, deps, server, active, 'agent')
  await updateServer(tx, serverId, { rentalActive: active, rentalSource: 'agent', rentalUpdatedAt: deps.clock.nowUs() })
}

/** The demo's history (scripts/demo): the server was enrolled, and created, at `at`. */
export async function backdateEnrolment(tx: DbOrTx, serverId: string, at: number): Promise<void> {
  await updateServer(tx, serverId, { enrolledAt: at, createdAt: at })
}
