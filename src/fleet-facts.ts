import type { Deps } from './platform/context'
import { utcDay } from './platform/time'
import { incidentsByServer } from './modules/alerts'
import { accruedByServerOn } from './modules/earnings'
import { markFleetDirty, provideRowFacts } from './modules/fleet'
import { serverListings } from './modules/marketplaces'

/**
 * What a fleet row shows of the modules above fleet (docs/fleet.md "Money and health on a row"),
 * handed to fleet by the composition root: where each server is listed or rented and at what price
 * (marketplaces), what it accrued today (earnings), its unresolved incidents (alerts). Read in the
 * snapshot's transaction. An incident opening, acknowledged or resolving marks the snapshot out of
 * date in its own transaction (the sync and the accrual sample mark it themselves).
 */
export function provideFleetFacts(deps: Deps): void {
  provideRowFacts(deps, async (db, tenantId, nowUs) => ({
    listings: await serverListings(db, tenantId),
    revenueTodayMicros: await accruedByServerOn(db, tenantId, utcDay(nowUs)),
    incidents: await incidentsByServer(db, tenantId),
  }))
  deps.events.on('alert.changed', async ({ tx, incident }) => {
    if (incident.serverId !== null) await markFleetDirty(tx, incident.tenantId)
  })
  // Several at once (a presence flush's incidents): each tenant's snapshot marked once.
  deps.events.on('alerts.changed', async ({ tx, changes }) => {
    for (const tenantId of new Set(changes.filter((c) => c.incident.serverId !== null).map((c) => c.incident.tenantId))) await markFleetDirty(tx, tenantId)
  })
}
