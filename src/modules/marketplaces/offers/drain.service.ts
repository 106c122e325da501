import type { Actor } from '../../../platform/access'
import type { Deps } from '../../../platform/context'
import { formatTimestamp, parseTimestamp } from '../../../platform/time'
import type { AuditContext } from '../../audit'
import type { MarketplaceId } from '../adapters/marketplaces.adapter'
import { adapterFor } from '../adapters/marketplaces.registry'
import { linksOfServers } from '../links/links.repository'
import type { OfferInput } from './offers.mapping'
import { announceMaintenance, cancelMaintenance, publishOffer, withdrawOffer } from './offers.service'

/**
 * What a drain (docs/marketplaces.md "Drain") reads and does on the platforms, through the same
 * verbs as PUT/DELETE …/offer and …/maintenance: each call logged in the operations log under the
 * server (with the drain's reason when gpuhq acts on its own), each refusal the module's error.
 */

export type DrainTarget = {
  marketplace: MarketplaceId
  /** The offer gpuhq keeps for the link (what keep-on would publish again), or null. */
  offer: Record<string, unknown> | null
  /** The platform's last word on whether the machine is listed (null: unknown). */
  listed: boolean | null
  /** Whether the platform has a maintenance API (marketplace_a's dnotify). */
  windowSupported: boolean
  windowAnnounced: boolean
}

/** The server's links, marketplace by marketplace. */
export async function drainTargets(deps: Deps, tenantId: string, serverId: string): Promise<DrainTarget[]> {
  return (await linksOfServers(deps.db, tenantId, [serverId]))
    .sort((a, b) => a.marketplace.localeCompare(b.marketplace))
    .map((l) => ({
      marketplace: l.marketplace,
      offer: l.offer,
      listed: l.remote.listed,
      windowSupported: adapterFor(deps, l.marketplace).maintenance !== null,
      windowAnnounced: l.remote.maintenance_announced,
    }))
}

type Call = { deps: Deps; actor: Actor; audit: AuditContext; serverId: string; marketplace: MarketplaceId }

export function drainWithdraw(call: Call): Promise<void> {
  return withdrawOffer(call)
}

export async function drainAnnounce(call: Call & { window: { startsAtUs: number; hours: number; category: string; reason: string | null } }): Promise<void> {
  const { window, ...rest } = call
  await announceMaintenance({
    ...rest,
    input: {
      starts_at: formatTimestamp(window.startsAtUs),
      hours: window.hours,
      category: window.category as 'software',
      reason: window.reason,
    },
  })
}

export function drainCancelWindow(call: Call): Promise<void> {
  return cancelMaintenance(call)
}

/**
 * Publishes the kept offer again. An end date that has passed meanwhile is left out (the platform
 * would refuse it): the offer goes back without one, as the answer's note says. Answers that note.
 */
export async function drainRelist(call: Call & { offer: Record<string, unknown>; reason: string }): Promise<string | null> {
  const { offer, reason, ...rest } = call
  const input = { ...offer } as OfferInput
  let note: string | null = null
  const end = typeof input.end_date === 'string' ? parseTimestamp(input.end_date) : null
  if (end !== null && end <= call.deps.clock.nowUs()) {
    delete input.end_date
    note = `the kept end date ${offer.end_date} had passed: published again without one`
  }
  await publishOffer({ ...rest, input, reason, holder: true })
  return note
}
