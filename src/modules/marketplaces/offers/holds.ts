import type { DbOrTx } from '../../../../db/client'
import type { Deps } from '../../../platform/context'

/**
 * Who may keep a server's offers off the market (docs/marketplaces.md "Drain"): a function answering
 * why, or null. Registered per Deps by the composition root (src/reactions.ts), since the modules
 * that hold a listing (drains) build on this one and this one cannot ask them.
 */
type ListingHold = (db: DbOrTx, tenantId: string, serverId: string) => Promise<string | null>

const holds = new WeakMap<Deps, Set<ListingHold>>()

export function registerListingHold(deps: Deps, hold: ListingHold): void {
  const set = holds.get(deps) ?? new Set<ListingHold>()
  set.add(hold)
  holds.set(deps, set)
}

/** Why the server's offers must stay off the market now, or null. */
export async function listingHoldOf(deps: Deps, tenantId: string, serverId: string): Promise<string | null> {
  for (const hold of holds.get(deps) ?? []) {
    const why = await hold(deps.db, tenantId, serverId)
    if (why !== null) return why
  }
  return null
}
