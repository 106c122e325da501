import type { DbOrTx } from '../../../db/client'
import { serverOfTenant, type ServerSummary } from '../fleet'

/** A managed (not decommissioned) server of the tenant: what a token may be bound or limited to. */
export async function findManagedServer(db: DbOrTx, tenantId: string, id: string): Promise<ServerSummary | undefined> {
  const server = await serverOfTenant(db, tenantId, id)
  return server && server.decommissionedAt === null ? server : undefined
}
