import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../../db/client'
import { ensureReaches, mayAccessServer, type Actor } from '../../../platform/access'
import type { Deps } from '../../../platform/context'
import { formatMoney } from '../../../platform/money'
import { formatNullableTimestamp, formatTimestamp } from '../../../platform/time'
import { recordAudit, type AuditContext } from '../../audit'
import { loadServer, serverOfTenant } from '../../fleet'
import { averageGpuPowerW } from '../../telemetry'
import { liveMachines } from '../accounts/accounts.service'
import type { MarketplaceBProjection, MarketplaceId } from '../adapters/marketplaces.adapter'
import { MarketplaceErrors } from '../marketplaces.errors'
import type { LinkCreate } from '../marketplaces.model'
import { findAccount } from '../accounts/marketplaces.repository'
import { announceEnded, refreshMarketRentals } from './rentals.service'
import { listingView } from '../listing/listing.view'
import { countLinks, deleteLink, findLink, insertLink, linksOf, linksToMachine, MAX_LINKS, setLinksState, type LinkRow } from './links.repository'

/**
 * Server-to-machine links (docs/marketplaces.md "Linking a server to a machine"). A link is made
 * only to a machine the connected account's live listing shows, and its projection is taken from
 * that listing. One machine claimed by two servers of the tenant puts both links in `conflict`;
 * removing one of them returns the other to `linked`.
 */

const WEEK_US = 7 * 24 * 3600 * 1_000_000

/** Fields the projection gained later (readiness, docs/readiness.md): null on a link the sync has not refreshed since. */
const LATER_FIELDS = { cuda_version: null, driver_version: null, gpu_total_ram_mb: null, cpu_ram_mb: null, cpu_cores: null }

export function linkView(l: LinkRow, electricityUsdPerGpuHour: string | null = null) {
  return {
    server_id: l.serverId,
    marketplace: l.marketplace,
    external_machine_id: l.externalMachineId,
    bind_mode: l.bindMode,
    state: l.state,
    linked_at: formatTimestamp(l.linkedAt),
    last_seen_at: formatNullableTimestamp(l.lastSeenAt),
    remote: { ...LATER_FIELDS, ...l.remote },
    ...(l.marketplace === 'marketplace_b' ? { marketplace_b: l.marketplaceB ?? nullMarketplaceB() } : {}),
    electricity_usd_per_gpu_hour: electricityUsdPerGpuHour,
    listing: listingView(l),
  }
}

export function nullMarketplaceB(): MarketplaceBProjection {
  return {
    max_rental_hours: null,
    partial_rental: null,
    vpn: null,
    partner: null,
    overclock: null,
    update_channel: null,
    backend_version: null,
    target_backend_version: null,
    driver_status: null,
    driver_version: null,
    kernel: null,
    max_fair_price_day: null,
    coins: null,
    fixed_coins: null,
    coin_prices: null,
    spot: null,
  }
}

export async function createLink({ deps, actor, audit, input }: { deps: Deps; actor: Actor; audit: AuditContext; input: Static<typeof LinkCreate> }) {
  const server = await loadServer(deps, actor, input.server_id)
  const marketplace: MarketplaceId = input.marketplace
  const account = await findAccount(deps.db, actor.tenantId, marketplace)
  if (!account) throw MarketplaceErrors.notConnectedHere()
  if (await findLink(deps.db, actor.tenantId, server.id, marketplace)) throw MarketplaceErrors.alreadyLinked()
  if ((await countLinks(deps.db, actor.tenantId)) >= MAX_LINKS) throw MarketplaceErrors.tooManyLinks()

  const machine = (await liveMachines(deps, actor, account, server.id)).find((m) => m.externalMachineId === input.external_machine_id)
  if (!machine) throw MarketplaceErrors.machineNotFound()

  const { view, ended } = await withTransaction(deps.db, async (tx) => {
    // Checked again inside the transaction: the platform call let other requests in.
    const current = await findAccount(tx, actor.tenantId, marketplace)
    if (!current) throw MarketplaceErrors.notConnectedHere()
    if (await findLink(tx, actor.tenantId, server.id, marketplace)) throw MarketplaceErrors.alreadyLinked()
    if ((await countLinks(tx, actor.tenantId)) >= MAX_LINKS) throw MarketplaceErrors.tooManyLinks()
    const now = deps.clock.nowUs()
    const others = await linksToMachine(tx, actor.tenantId, marketplace, machine.externalMachineId)
    // Linking a held machine puts the holder's link in conflict: a token limited to servers may not do that to another server.
    ensureReaches(
      actor,
      others.map((o) => o.serverId),
      'a machine linked to another server',
      '/external_machine_id',
    )
    await setLinksState(
      tx,
      actor.tenantId,
      others.map((o) => o.id),
      'conflict',
    )
    const row: LinkRow = {
      id: deps.newId(),
      tenantId: actor.tenantId,
      serverId: server.id,
      marketplace,
      accountId: current.id,
      externalMachineId: machine.externalMachineId,
      bindMode: 'manual',
      state: others.length ? 'conflict' : 'linked',
      linkedAt: now,
      lastSeenAt: now,
      remote: machine.remote,
      marketplaceB: marketplace === 'marketplace_b' ? machine.marketplaceB : null,
      offer: null,
      offerPublishedAt: null,
      endDateDays: null,
      endDateExtendedTo: null,
      endDateExtendedAt: null,
      idleJob: null,
    }
    await insertLink(tx, row)
    await recordAudit(tx, deps, audit, { operation: 'marketplaces.link', targetKind: 'server', targetId: server.id })
    // The machine's rentals count for the server from the moment it is linked.
    return { view: linkView(row), ended: await refreshMarketRentals(tx, deps, actor.tenantId, [server.id]) }
  })
  await announceEnded(deps, ended)
  return view
}

/**
 * Every link of the tenant the actor may see, with the measured electricity cost of one GPU-hour:
 * the server's tariff × its average GPU power over the last 7 days (kW) ÷ its card count.
 */
export async function listLinks({ deps, actor }: { deps: Deps; actor: Actor }) {
  const links = (await linksOf(deps.db, actor.tenantId)).filter((l) => mayAccessServer(actor, l.serverId))
  const now = deps.clock.nowUs()
  const perServer = new Map<string, string | null>()
  const electricityOf = async (serverId: string): Promise<string | null> => {
    if (!perServer.has(serverId)) perServer.set(serverId, await electricity(deps, actor.tenantId, serverId, now))
    return perServer.get(serverId)!
  }
  const views = []
  for (const l of links) views.push(linkView(l, await electricityOf(l.serverId)))
  return { links: views }
}

async function electricity(deps: Deps, tenantId: string, serverId: string, nowUs: number): Promise<string | null> {
  const server = await serverOfTenant(deps.db, tenantId, serverId)
  if (!server || server.electricityMicrosPerKwh === null || server.gpuCount <= 0) return null
  const watts = await averageGpuPowerW(deps.db, serverId, nowUs - WEEK_US, nowUs)
  if (watts === null) return null
  const micros = Math.round((server.electricityMicrosPerKwh * (watts / 1000)) / server.gpuCount)
  return Number.isSafeInteger(micros) ? formatMoney(micros) : null
}

export async function unlink({
  deps,
  actor,
  audit,
  serverId,
  marketplace,
}: {
  deps: Deps
  actor: Actor
  audit: AuditContext
  serverId: string
  marketplace: MarketplaceId
}) {
  const ended = await withTransaction(deps.db, async (tx) => {
    const link = await findLink(tx, actor.tenantId, serverId.toLowerCase(), marketplace)
    if (!link) throw MarketplaceErrors.linkNotFound()
    await deleteLink(tx, actor.tenantId, link.serverId, marketplace)
    // A conflict this link was half of is over when one claimant is left.
    const left = await linksToMachine(tx, actor.tenantId, marketplace, link.externalMachineId)
    if (left.length === 1 && left[0]!.state === 'conflict') await setLinksState(tx, actor.tenantId, [left[0]!.id], 'linked')
    await recordAudit(tx, deps, audit, { operation: 'marketplaces.unlink', targetKind: 'server', targetId: link.serverId })
    // An unlinked machine's rentals no longer hold the server's commands.
    return refreshMarketRentals(tx, deps, actor.tenantId, [link.serverId])
  })
  await announceEnded(deps, ended)
}
