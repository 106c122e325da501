import type { DbOrTx } from '../../../db/client'
import { perDeps, type Deps } from '../../platform/context'
import type { MarketplaceId } from '../../platform/marketplace-id'

/**
 * What a fleet row shows of the modules above fleet (docs/fleet.md "Money and health on a row"):
 * where each server is listed or rented now and at what price (marketplaces, from the links the
 * sync keeps), what it accrued since 00:00 UTC (earnings), and its unresolved alert incidents
 * (alerts). Fleet cannot import them, so the composition root hands in one function that reads
 * them (src/fleet-facts.ts), in the snapshot's own transaction; and their writers mark the snapshot
 * out of date (`markFleetDirty`) when a figure moves.
 */

/** The server's offer as the rule of docs/fleet.md picked it among its links. */
export type ServerListing = {
  marketplace: MarketplaceId
  /** USD micro-dollars per GPU-hour of the listed on-demand price; null when the platform shows none. */
  priceMicros: number | null
  listed: boolean
  rented: boolean
  /** GPUs rented there now; null when rented but the platform does not say how many. */
  rentedGpus: number | null
}

export type IncidentCounts = { critical: number; warning: number; info: number }

export type RowFacts = {
  listings: ReadonlyMap<string, ServerListing>
  /** Accrued since 00:00 UTC of `nowUs`, micro-USD before the platform's cut, summed over marketplaces. */
  revenueTodayMicros: ReadonlyMap<string, number>
  incidents: ReadonlyMap<string, IncidentCounts>
}

export type RowFactsSource = (db: DbOrTx, tenantId: string, nowUs: number) => Promise<RowFacts>

const NO_FACTS: RowFacts = { listings: new Map(), revenueTodayMicros: new Map(), incidents: new Map() }
const source = perDeps((): { read: RowFactsSource | null } => ({ read: null }))

/** The composition root's reader of the row facts (once per Deps, by buildDeps). */
export function provideRowFacts(deps: Deps, read: RowFactsSource): void {
  source(deps).read = read
}

export async function rowFactsOf(deps: Deps, db: DbOrTx, tenantId: string, nowUs: number): Promise<RowFacts> {
  return (await source(deps).read?.(db, tenantId, nowUs)) ?? NO_FACTS
}
