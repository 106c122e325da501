import type { DbOrTx } from '../../../../db/client'
import type { Deps } from '../../../platform/context'
import { markFleetDirty, recordServerEvent, setMarketRentals } from '../../fleet'
import type { RemoteProjection } from '../adapters/marketplaces.adapter'
import { linksOfServers } from './links.repository'

/**
 * The marketplaces' share of a server's rental facts (docs/marketplaces.md "Rentals and
 * commands"): a marketplace reports a rental on a server while the server's link to it is not
 * stale and the machine's last projection shows a running rental. A link in conflict still counts:
 * when two servers claim one rented machine, holding a dangerous command on both is the safe side.
 */
function reportsRental(remote: RemoteProjection): boolean {
  return (remote.rentals_running ?? 0) > 0 || remote.rentals.length > 0
}

/**
 * Recomputes the marketplace rental facts of the given servers of the tenant from their links, in
 * the caller's transaction. Answers the servers on which no rental runs any more though one ran
 * before: after commit, the caller emits `server.rental_ended` for each (waiting commands go).
 * Every caller has just changed links (a sync, a link, an unlink, a disconnect), so the fleet
 * snapshot, whose rows show where each server is listed or rented and at what price, is marked out
 * of date too.
 */
export async function refreshMarketRentals(tx: DbOrTx, deps: Deps, tenantId: string, serverIds: Iterable<string>): Promise<string[]> {
  await markFleetDirty(tx, tenantId)
  const ids = [...new Set(serverIds)]
  const links = await linksOfServers(tx, tenantId, ids)
  const ended: string[] = []
  for (const serverId of ids) {
    const reporting = links.filter((l) => l.serverId === serverId && l.state !== 'stale' && reportsRental(l.remote)).map((l) => l.marketplace)
    if (await setMarketRentals(tx, deps, serverId, reporting)) ended.push(serverId)
  }
  return ended
}

/** Tells the rest of the service that rentals ended (commands waiting for them may go now). */
export async function announceEnded(deps: Deps, serverIds: readonly string[]): Promise<void> {
  for (const serverId of serverIds) await deps.events.emit('server.rental_ended', { serverId })
}

/**
 * A maintenance window the platform now shows for a linked machine that it did not show before (or
 * a changed one), announced through gpuhq or in the platform's own console, becomes a server event
 * in the caller's transaction, and with it the owner's `maint` notification. Unchanged windows
 * record nothing, so each sync does not repeat it.
 */
export async function noteMaintenance(
  tx: DbOrTx,
  deps: Deps,
  link: { serverId: string; tenantId: string; marketplace: string },
  before: RemoteProjection | null,
  after: RemoteProjection,
): Promise<void> {
  if (!after.maintenance_announced) return
  if (before?.maintenance_announced && before.maintenance_starts_at === after.maintenance_starts_at && before.maintenance_hours === after.maintenance_hours)
    return
  const hours = after.maintenance_hours !== null ? ` for ${after.maintenance_hours} h` : ''
  const when = after.maintenance_starts_at ? ` from ${after.maintenance_starts_at}${hours}` : ''
  await recordServerEvent(
    tx,
    deps,
    { id: link.serverId, tenantId: link.tenantId },
    {
      kind: 'marketplace.maintenance_announced',
      message: `${link.marketplace} shows a maintenance window${when}: renters see it`,
      data: { marketplace: link.marketplace, starts_at: after.maintenance_starts_at, hours: after.maintenance_hours },
    },
  )
}
