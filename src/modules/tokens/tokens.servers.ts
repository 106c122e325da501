import type { DbOrTx } from '../../../db/client'
import { findServer, type ServerRow } from '../fleet'

/** A managed (not decommissioned) server of the tenant: what a token may be bound or limited to. */
export function findManagedServer(db: DbOrTx, tenantId: string, id: string): ServerRow | undefined {
  const server = findServer(db, tenantId, id)
  return server && server.decommissionedAt === null ? server : undefined
}
