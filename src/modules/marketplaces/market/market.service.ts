import { withTransaction } from '../../../../db/client'
import { MARKETPLACES } from '../../../platform/marketplace-id'
import { mayAccessServer, type Actor } from '../../../platform/access'
import type { Deps } from '../../../platform/context'
import { formatMoney, parseMoney } from '../../../platform/money'
import { formatNullableTimestamp, formatTimestamp } from '../../../platform/time'
import { openKey } from '../accounts/accounts.service'
import { type LinkRow, linksOf } from '../links/links.repository'
import { dropPricesBefore, insertSnapshots, modelAt, pruneSnapshots, type SnapshotRow, snapshotAt, snapshotTimeAt } from './market.repository'
import { standing, summarize } from './market.stats'
import { MarketplaceError, type MarketOffer, type MarketplaceId } from '../adapters/marketplaces.adapter'
import { cloreUsdPerGpuHour } from '../adapters/marketplace-b/marketplace-b.mapping'
import { connectedAccounts } from '../accounts/marketplaces.repository'
import { adapterFor } from '../adapters/marketplaces.registry'
import { callPlatform, systemActor } from '../operations/operations.service'
import { rentalOf } from '../deals/deals.service'

/**
 * Market data (docs/marketplaces.md "Market data"). The marketplaces.sync job reads each platform's
 * public asking prices once per run and keeps a snapshot per normalised GPU model (the same key as
 * `remote.gpu_model`); every view reads snapshots, never the platform, so the public statistics are
 * cached by construction and cost the platforms nothing per request.
 */

const DAY_US = 24 * 3600 * 1_000_000
/** Snapshots older than this are deleted by the sync (price movement looks back at most 90 days). */
const KEEP_DAYS = 90
/** The most prices one snapshot row keeps for standing percentiles (far above any platform's offers of one model). */
const MAX_PRICES = 100_000

/** A market is read at most this often: hourly snapshots are plenty for movement and standing, and cost the platforms little. */
const SNAPSHOT_EVERY_US = 55 * 60 * 1_000_000

/**
 * Reads each market whose last snapshot is an hour old (or missing) and stores a snapshot of each
 * that could be read; a failure skips that market until the next run.
 */
export async function snapshotMarkets(deps: Deps): Promise<string> {
  const now = deps.clock.nowUs()
  const parts: string[] = []
  for (const marketplace of MARKETPLACES) {
    const last = await snapshotTimeAt(deps.db, marketplace, now)
    if (last !== null && now - last < SNAPSHOT_EVERY_US) {
      parts.push(`${marketplace}: fresh`)
      continue
    }
    const offers = await readMarket(deps, marketplace)
    if (typeof offers === 'string') {
      parts.push(`${marketplace}: ${offers}`)
      continue
    }
    const rows = snapshotRows(deps, marketplace, offers, now)
    await withTransaction(deps.db, async (tx) => {
      await insertSnapshots(tx, rows)
      await dropPricesBefore(tx, marketplace, now)
    })
    parts.push(`${marketplace}: ${rows.length} models from ${offers.length} offers`)
  }
  const pruned = await withTransaction(deps.db, (tx) => pruneSnapshots(tx, now - KEEP_DAYS * DAY_US))
  return `market ${parts.join(', ')}; ${pruned} old snapshot rows pruned`
}

/**
 * marketplace_a's offer search is public: read anonymously, in no tenant's log. marketplace_b reads
 * its market only with a key: the first connected account's (its operations log shows the calls as
 * the system's, with the reason).
 */
async function readMarket(deps: Deps, marketplace: MarketplaceId): Promise<MarketOffer[] | string> {
  const adapter = adapterFor(deps, marketplace)
  if (marketplace === 'marketplace_a') {
    try {
      return await adapter.listMarket(null)
    } catch (e) {
      if (e instanceof MarketplaceError) return `not read (${e.message})`
      throw e
    }
  }
  const account = (await connectedAccounts(deps.db)).find((a) => a.marketplace === marketplace)
  if (!account) return 'not read (no connected account to read it with)'
  const asked = await callPlatform(deps, systemActor(account.tenantId), null, () => adapter.listMarket(openKey(deps, account)), 'market statistics')
  return asked.ok ? asked.value : `not read (${asked.failure.message})`
}

function snapshotRows(deps: Deps, marketplace: MarketplaceId, offers: MarketOffer[], now: number): SnapshotRow[] {
  const byModel = new Map<string, { prices: number[]; gpus: number }>()
  for (const o of offers) {
    if (o.gpuModel === null || o.priceGpuHourMicros === null || o.rentable === false) continue
    const entry = byModel.get(o.gpuModel) ?? { prices: [], gpus: 0 }
    entry.prices.push(o.priceGpuHourMicros)
    entry.gpus += o.gpuCount ?? 0
    byModel.set(o.gpuModel, entry)
  }
  return [...byModel].map(([gpuModel, { prices, gpus }]) => {
    const s = summarize(prices)!
    return {
      id: deps.newId(),
      marketplace,
      gpuModel,
      takenAt: now,
      count: s.count,
      gpus,
      minMicros: s.min,
      p25Micros: s.p25,
      medianMicros: s.median,
      p75Micros: s.p75,
      maxMicros: s.max,
      prices: [...prices].sort((a, b) => a - b).slice(0, MAX_PRICES),
    }
  })
}

function summaryView(r: SnapshotRow) {
  return {
    offers: r.count,
    gpus: r.gpus,
    min: formatMoney(r.minMicros),
    p25: formatMoney(r.p25Micros),
    median: formatMoney(r.medianMicros),
    p75: formatMoney(r.p75Micros),
    max: formatMoney(r.maxMicros),
    taken_at: formatTimestamp(r.takenAt),
  }
}

/** The latest snapshot of each marketplace (filtered), and when each was taken. */
async function latest(deps: Deps, filter: { marketplace?: MarketplaceId; gpuModel?: string } = {}) {
  const now = deps.clock.nowUs()
  const takenAt = Object.fromEntries(MARKETPLACES.map((m) => [m, null])) as Record<MarketplaceId, string | null>
  const rows: SnapshotRow[] = []
  for (const m of MARKETPLACES) {
    const at = await snapshotTimeAt(deps.db, m, now)
    takenAt[m] = formatNullableTimestamp(at)
    if (filter.marketplace && filter.marketplace !== m) continue
    if (at !== null) rows.push(...(await snapshotAt(deps.db, m, at)).filter((r) => !filter.gpuModel || r.gpuModel === filter.gpuModel))
  }
  return { rows, takenAt }
}

/** GET /marketplaces/stats (public): asking prices per model and platform, USD per GPU-hour. */
export async function marketStats(deps: Deps, query: { marketplace?: MarketplaceId; gpu_model?: string }) {
  const { rows, takenAt } = await latest(deps, { marketplace: query.marketplace, gpuModel: query.gpu_model })
  return { taken_at: takenAt, items: rows.map((r) => ({ marketplace: r.marketplace, gpu_model: r.gpuModel, ...summaryView(r) })) }
}

/** The asking price of a linked machine in USD micro-dollars per GPU-hour: marketplace_a's `price_gpu_hour`; marketplace_b's by the same rule as its market (cloreUsdPerGpuHour). */
export function ownPriceMicros(link: LinkRow): number | null {
  if (link.marketplace === 'marketplace_a') return link.remote.price_gpu_hour === null ? null : parseMoney(link.remote.price_gpu_hour)
  const b = link.marketplaceB
  return cloreUsdPerGpuHour(
    (coin) => b?.coin_prices?.[coin]?.on_demand ?? null,
    (coin) => b?.spot?.rates_usd_per_coin[coin] ?? null,
    link.remote.gpu_count,
  )
}

/**
 * The actor's links that are offered now (listed), with their model, price, GPUs and the GPUs of
 * them free to rent now (listed GPUs less the rented ones; none when a rental holds an unknown
 * number), which is what the market's own search counts of them.
 */
async function ownOffers(deps: Deps, actor: Actor) {
  return (await linksOf(deps.db, actor.tenantId))
    .filter((l) => mayAccessServer(actor, l.serverId) && l.remote.listed === true)
    .map((l) => {
      const gpus = l.remote.gpu_count ?? 0
      const { rentedGpus } = rentalOf(l)
      return { link: l, model: l.remote.gpu_model, price: ownPriceMicros(l), gpus, forRent: rentedGpus === null ? 0 : Math.max(0, gpus - rentedGpus) }
    })
}

/** GET /marketplaces/supply: how much of each model the tenant offers against the market. */
export async function marketSupply(deps: Deps, actor: Actor) {
  const { rows, takenAt } = await latest(deps)
  const mine = (await ownOffers(deps, actor)).filter((o) => o.model !== null)
  const keys = new Map<string, { marketplace: MarketplaceId; gpu_model: string }>()
  for (const r of rows) keys.set(`${r.marketplace}|${r.gpuModel}`, { marketplace: r.marketplace, gpu_model: r.gpuModel })
  for (const o of mine) keys.set(`${o.link.marketplace}|${o.model}`, { marketplace: o.link.marketplace, gpu_model: o.model! })
  const items = [...keys.values()]
    .sort((a, b) => a.marketplace.localeCompare(b.marketplace) || a.gpu_model.localeCompare(b.gpu_model))
    .map((k) => {
      const market = rows.find((r) => r.marketplace === k.marketplace && r.gpuModel === k.gpu_model)
      const own = mine.filter((o) => o.link.marketplace === k.marketplace && o.model === k.gpu_model)
      const forRent = own.reduce((n, o) => n + o.forRent, 0)
      return {
        ...k,
        my_offers: own.length,
        my_gpus: own.reduce((n, o) => n + o.gpus, 0),
        my_gpus_for_rent: forRent,
        market_offers: market?.count ?? 0,
        market_gpus: market?.gpus ?? 0,
        // Like for like: the market counts GPUs free to rent now, so yours are counted the same way
        // (a snapshot older than your listing can still show fewer: then 1, never more).
        share_of_gpus: market && market.gpus > 0 ? Math.round((1000 * Math.min(forRent, market.gpus)) / market.gpus) / 1000 : null,
      }
    })
  return { taken_at: takenAt, items }
}

/** GET /marketplaces/prices: each of the tenant's offers beside its model's market. */
export async function marketPrices(deps: Deps, actor: Actor) {
  const { rows, takenAt } = await latest(deps)
  const items = (await ownOffers(deps, actor)).map((o) => {
    const market = rows.find((r) => r.marketplace === o.link.marketplace && r.gpuModel === o.model)
    return {
      server_id: o.link.serverId,
      marketplace: o.link.marketplace,
      external_machine_id: o.link.externalMachineId,
      gpu_model: o.model,
      price_gpu_hour: o.price === null ? null : formatMoney(o.price),
      market: market ? summaryView(market) : null,
    }
  })
  return { taken_at: takenAt, items }
}

/** GET /marketplaces/prices/standing: each offer as a percentile of its model's market. */
export async function priceStanding(deps: Deps, actor: Actor) {
  const { rows, takenAt } = await latest(deps)
  const items = (await ownOffers(deps, actor)).map((o) => {
    const market = rows.find((r) => r.marketplace === o.link.marketplace && r.gpuModel === o.model)
    const s = market && o.price !== null ? standing(o.price, market.prices) : null
    return {
      server_id: o.link.serverId,
      marketplace: o.link.marketplace,
      gpu_model: o.model,
      price_gpu_hour: o.price === null ? null : formatMoney(o.price),
      market_offers: market?.count ?? 0,
      cheaper: s?.cheaper ?? null,
      equal: s?.equal ?? null,
      dearer: s?.dearer ?? null,
      percentile: s?.percentile ?? null,
      median: market ? formatMoney(market.medianMicros) : null,
    }
  })
  return { taken_at: takenAt, items }
}

/** GET /marketplaces/prices/movement: how each model's asking prices moved over the last `days`. */
export async function priceMovement(deps: Deps, query: { days?: number; marketplace?: MarketplaceId; gpu_model?: string }) {
  const days = query.days ?? 7
  const since = deps.clock.nowUs() - days * DAY_US
  const { rows } = await latest(deps, { marketplace: query.marketplace, gpuModel: query.gpu_model })
  const items = []
  for (const to of rows) {
    const from = (await modelAt(deps.db, to.marketplace, to.gpuModel, since)) ?? null
    const change = from ? to.medianMicros - from.medianMicros : null
    items.push({
      marketplace: to.marketplace,
      gpu_model: to.gpuModel,
      from: from ? summaryView(from) : null,
      to: summaryView(to),
      median_change: change === null ? null : formatMoney(change),
      median_change_percent: change === null || from!.medianMicros === 0 ? null : Math.round((1000 * change) / from!.medianMicros) / 10,
    })
  }
  return { days, items }
}
