import type { DbOrTx } from '../../../../db/client'
import type { Deps } from '../../../platform/context'
import { formatMoney, parseMoney } from '../../../platform/money'
import { openKey } from '../accounts/accounts.service'
import { allLinks, linksOf, linksOfAccount, type LinkRow } from '../links/links.repository'
import type { MarketplaceId } from '../adapters/marketplaces.adapter'
import { findAccount } from '../accounts/marketplaces.repository'
import { adapterFor } from '../adapters/marketplaces.registry'
import { callPlatform, systemActor } from '../operations/operations.service'

/**
 * What earnings read of the marketplaces (docs/earnings.md): the running deals each link's last
 * projection shows, the rates it carries, and the platform's own daily figures where it reports any.
 */

/** A running deal: per-day price in its currency (the platform's spelling); null when the platform does not show it. */
type RunningDeal = { kind: string; currency: string; priceDay: string | null; gpuCount: number | null }

export type AccrualSource = {
  tenantId: string
  serverId: string
  marketplace: MarketplaceId
  linkedAt: number
  /** When the deals below were seen (the last sync that listed the machine); null: never. */
  seenAt: number | null
  deals: RunningDeal[]
  /** USD per coin as the projection carries them (marketplace_b), money text. */
  rates: Record<string, string>
}

const OCCUPANCY_KINDS: Record<string, string> = { D: 'on_demand', R: 'reserved', I: 'interruptible' }

/**
 * The deals of a link's last projection. A stale link has none (the machine is gone from the
 * listing). marketplace_a shows no orders, only one occupancy character per card: on-demand (D) and
 * reserved (R) cards are priced at the listed `price_gpu_hour`, interruptible (I) ones at the
 * minimum bid (a lower bound: a bid is at least that), × 24 h × cards; an occupancy not understood
 * while rentals run gives one deal of unknown price (its time accrues, no money). marketplace_b
 * shows its orders: a spot order at its bid in its coin; an on-demand order, whose terms Clore does
 * not show, at the server's on-demand price in the first coin it prices.
 */
function dealsOf(link: LinkRow): RunningDeal[] {
  if (link.state === 'stale') return []
  const r = link.remote
  if (link.marketplace === 'marketplace_a') {
    // One character per card, with or without spaces between them ("D D x x " or "DDxx").
    const tokens = [...(r.gpu_occupancy ?? '').replace(/\s+/g, '')]
    if (r.gpu_count === null || tokens.length !== r.gpu_count) {
      return (r.rentals_running ?? 0) > 0 ? [{ kind: 'rental', currency: 'USD', priceDay: null, gpuCount: null }] : []
    }
    const deals: RunningDeal[] = []
    for (const [token, kind] of Object.entries(OCCUPANCY_KINDS)) {
      const cards = tokens.filter((t) => t === token).length
      if (cards === 0) continue
      const perHour = kind === 'interruptible' ? r.min_bid_hour : r.price_gpu_hour
      deals.push({ kind, currency: 'USD', priceDay: perHour === null ? null : formatMoney(parseMoney(perHour) * 24 * cards), gpuCount: cards })
    }
    return deals
  }
  const prices = link.marketplaceB?.coin_prices ?? {}
  const coins = [...(link.marketplaceB?.coins ?? []), ...Object.keys(prices)]
  const fallbackCoin = coins.find((c) => prices[c]?.on_demand)
  return r.rentals.map((o) => {
    if (o.currency !== null && o.price_day !== null) return { kind: o.kind ?? 'rental', currency: o.currency, priceDay: o.price_day, gpuCount: o.gpu_count }
    if (fallbackCoin) return { kind: o.kind ?? 'on_demand', currency: fallbackCoin, priceDay: prices[fallbackCoin]!.on_demand, gpuCount: o.gpu_count }
    return { kind: o.kind ?? 'rental', currency: o.currency ?? 'unknown', priceDay: null, gpuCount: o.gpu_count }
  })
}

/**
 * Every link of every tenant with its deals, for the earnings.sample job. `deals` is derived when it
 * is read, so a link whose projection cannot be priced fails where its own sample reads it (inside
 * the job's per-link error boundary), not for every link at once.
 */
export async function accrualSources(db: DbOrTx): Promise<AccrualSource[]> {
  return (await allLinks(db)).map((l) => ({
    tenantId: l.tenantId,
    serverId: l.serverId,
    marketplace: l.marketplace,
    linkedAt: l.linkedAt,
    seenAt: l.lastSeenAt,
    get deals() {
      return dealsOf(l)
    },
    rates: l.marketplaceB?.spot?.rates_usd_per_coin ?? {},
  }))
}

/**
 * The platform's own figure per linked server for each of `days` (days since the epoch), read with
 * the tenant's stored key and logged as the system. Null when the marketplace has no report or no
 * usable connection; a day whose read failed is left out (the next read tries again).
 */
export async function platformDayEarnings(
  deps: Deps,
  tenantId: string,
  marketplace: MarketplaceId,
  days: number[],
): Promise<Map<number, Map<string, string>> | null> {
  const read = adapterFor(deps, marketplace).dayEarnings
  const account = await findAccount(deps.db, tenantId, marketplace)
  if (!read || !account || account.status !== 'connected') return null
  const serverOf = new Map((await linksOfAccount(deps.db, account.id)).map((l) => [l.externalMachineId, l.serverId]))
  const out = new Map<number, Map<string, string>>()
  for (const day of days) {
    const asked = await callPlatform(deps, systemActor(tenantId), null, () => read(openKey(deps, account), day), 'earnings report')
    if (!asked.ok) continue
    const byServer = new Map<string, string>()
    for (const [machine, usd] of asked.value) {
      const server = serverOf.get(machine)
      if (server) byServer.set(server, usd)
    }
    out.set(day, byServer)
  }
  return out
}

/**
 * The exchange rates the tenant's marketplace_b links last carried (the freshest sighting wins), with
 * when they were seen; marketplace_a's dollar is 1 with no observation time.
 */
export async function currentRates(
  db: DbOrTx,
  tenantId: string,
): Promise<{ marketplace: MarketplaceId; currency: string; usdPerCoin: string; observedAt: number | null }[]> {
  const out: { marketplace: MarketplaceId; currency: string; usdPerCoin: string; observedAt: number | null }[] = [
    { marketplace: 'marketplace_a', currency: 'USD', usdPerCoin: '1', observedAt: null },
  ]
  const fresh = new Map<string, { usdPerCoin: string; observedAt: number }>()
  for (const l of await linksOf(db, tenantId)) {
    if (l.marketplace !== 'marketplace_b' || l.lastSeenAt === null) continue
    for (const [coin, rate] of Object.entries(l.marketplaceB?.spot?.rates_usd_per_coin ?? {})) {
      const seen = fresh.get(coin)
      if (!seen || seen.observedAt < l.lastSeenAt) fresh.set(coin, { usdPerCoin: rate, observedAt: l.lastSeenAt })
    }
  }
  for (const [currency, r] of [...fresh].sort(([a], [b]) => a.localeCompare(b))) out.push({ marketplace: 'marketplace_b', currency, ...r })
  return out
}

/**
 * Whether a link's machine is rented now and how many of its GPUs (null: rented, but the deals do
 * not say how many GPUs each holds).
 */
export function rentalOf(link: LinkRow): { rented: boolean; rentedGpus: number | null } {
  const deals = dealsOf(link)
  const rented = deals.length > 0 || (link.remote.rentals_running ?? 0) > 0
  const counts = deals.map((d) => d.gpuCount)
  return { rented, rentedGpus: !rented ? 0 : counts.length > 0 && counts.every((c) => c !== null) ? counts.reduce((a: number, c) => a + c!, 0) : null }
}
