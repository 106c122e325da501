import type { Static } from '@sinclair/typebox'
import { listingHoldOf } from './holds'
import { withTransaction } from '../../../../db/client'
import type { Actor } from '../../../platform/access'
import type { Deps } from '../../../platform/context'
import { invalidField } from '../../../platform/domain-error'
import { formatTimestamp, parseTimestamp } from '../../../platform/time'
import { recordAudit, type AuditContext } from '../../audit'
import { markFleetDirty } from '../../fleet'
import { openKey, recordOutcome } from '../accounts/accounts.service'
import { type LinkRow, findLink, linksOfServers, updateLink } from '../links/links.repository'
import { linkView, nullMarketplaceB } from '../links/links.service'
import { type MachineRef, MarketplaceError, type MarketplaceId, type OfferWrite } from '../adapters/marketplaces.adapter'
import { MarketplaceErrors } from '../marketplaces.errors'
import type { MaintenanceBody } from '../marketplaces.model'
import { type AccountRow, findAccount } from '../accounts/marketplaces.repository'
import { adapterFor } from '../adapters/marketplaces.registry'
import { noteMaintenance } from '../links/rentals.service'
import { type OfferInput, assertPricesAboveZero, checkOffer, cloreSettings, offerWarnings, projectOffer, vastAsk } from './offers.mapping'
import { callPlatform } from '../operations/operations.service'

/**
 * Offers and maintenance windows of a linked machine (docs/marketplaces.md "Publishing an offer",
 * "Maintenance windows"). Each write goes to the platform with the stored key (logged under the
 * server), and only once the platform accepted it does the link's projection change, with the
 * offer kept for keep-on. The next sync confirms the projection from the live listing.
 */

type Target = { deps: Deps; actor: Actor; audit: AuditContext; serverId: string; marketplace: MarketplaceId }
const YEAR_US = 365 * 24 * 3600 * 1_000_000

/** The link and its connected account; 404 without a link, 409 without a usable stored key. */
export async function writable(deps: Deps, actor: Actor, serverId: string, marketplace: MarketplaceId): Promise<{ link: LinkRow; account: AccountRow }> {
  const link = await findLink(deps.db, actor.tenantId, serverId.toLowerCase(), marketplace)
  if (!link) throw MarketplaceErrors.linkNotFound()
  const account = await findAccount(deps.db, actor.tenantId, marketplace)
  if (!account) throw MarketplaceErrors.notConnectedHere()
  if (account.status === 'invalid_key') throw MarketplaceErrors.fromStoredKey(new MarketplaceError(marketplace, 'rejected_key', 'stored key marked invalid'))
  return { link, account }
}

export const refOf = (link: LinkRow): MachineRef => ({ externalMachineId: link.externalMachineId, name: link.remote.hostname })

/**
 * Sends one write with the stored key, logged under the server (with `reason` when gpuhq acts on its
 * own). A rejected key marks the connection invalid_key; a refusal is the request's, not the key's,
 * and leaves the connection as it is. Throws the module's error on failure.
 */
export async function write<T>(
  deps: Deps,
  actor: Actor,
  account: AccountRow,
  link: LinkRow,
  fn: (key: string) => Promise<T>,
  reason: string | null = null,
): Promise<T> {
  const asked = await callPlatform(deps, actor, link.serverId, () => fn(openKey(deps, account)), reason)
  if (asked.ok) return asked.value
  if (asked.failure.failure === 'rejected_key') await withTransaction(deps.db, (tx) => recordOutcome(tx, deps, account, asked))
  throw MarketplaceErrors.fromWrite(asked.failure)
}

/** The platform's request for an offer given in the API's terms. */
export function offerWriteOf(link: LinkRow, input: OfferInput): OfferWrite {
  // Every publication passes here (PUT …/offer, strategy's accept, keep-on): no rental price of zero.
  assertPricesAboveZero(link.marketplace, input)
  if (link.marketplace === 'marketplace_a') {
    const id = Number(link.externalMachineId)
    if (!Number.isSafeInteger(id)) throw MarketplaceErrors.notSupported('', 'the linked machine id is not a marketplace_a machine id')
    return { marketplace: 'marketplace_a', ask: vastAsk(id, input, link.remote) }
  }
  if (!link.remote.hostname) throw MarketplaceErrors.notSupported('', 'marketplace_b addresses a server by its name, and the linked server has none known yet')
  return { marketplace: 'marketplace_b', settings: cloreSettings(link.remote.hostname, input) }
}

/** Applies an accepted offer to the link: the projection, the kept offer (merged over the last one) and its time. */
export function applyOffer(deps: Deps, link: LinkRow, input: OfferInput, offer: OfferWrite): LinkRow {
  const minChunk = offer.marketplace === 'marketplace_a' ? offer.ask.min_chunk : null
  const projected = projectOffer(link.marketplace, input, link.remote, link.marketplaceB, minChunk, nullMarketplaceB())
  return {
    ...link,
    remote: projected.remote,
    marketplaceB: projected.marketplaceB,
    offer: { ...(link.offer ?? {}), ...input },
    offerPublishedAt: deps.clock.nowUs(),
  }
}

/** Publishes the offer; `reason` (pricing strategy's acceptance) goes into the operations log beside the call. */
export async function publishOffer({
  deps,
  actor,
  audit,
  serverId,
  marketplace,
  input,
  reason = null,
  holder = false,
}: Target & {
  input: OfferInput
  reason?: string | null
  /** The one holding the listing off the market (a drain relisting): its hold does not stop it. */
  holder?: boolean
}) {
  const { link, account } = await writable(deps, actor, serverId, marketplace)
  // A drain keeps the offers off until its work is done: a price change, a suggestion accepted, a
  // bulk change or a listing profile must not put the server back on the market meanwhile.
  const held = holder ? null : await listingHoldOf(deps, actor.tenantId, link.serverId)
  if (held !== null) throw MarketplaceErrors.listingHeld(held)
  checkOffer(marketplace, input, deps.clock.nowUs())
  const offer = offerWriteOf(link, input)
  const { extendedContracts } = await write(deps, actor, account, link, (key) => adapterFor(deps, marketplace).publishOffer(key, offer), reason)
  return withTransaction(deps.db, async (tx) => {
    // The link as it is now (a sync may have refreshed it meanwhile); gone → answer what was sent.
    const current = await findLink(tx, actor.tenantId, link.serverId, marketplace)
    const next = applyOffer(deps, current ?? link, input, offer)
    if (current)
      await updateLink(tx, next.id, { remote: next.remote, marketplaceB: next.marketplaceB, offer: next.offer, offerPublishedAt: next.offerPublishedAt })
    await markFleetDirty(tx, actor.tenantId) // the row's marketplace and price
    await recordAudit(tx, deps, audit, { operation: 'marketplaces.offer.publish', targetKind: 'server', targetId: link.serverId })
    await deps.events.emit('offer.published', { tx, tenantId: actor.tenantId, serverId: link.serverId, marketplace, summary: offerSummary(input) })
    return {
      link: linkView(next),
      warnings: offerWarnings(marketplace, input, (current ?? link).remote, extendedContracts),
      extended_contracts: extendedContracts,
    }
  })
}

/** A one-line account of an offer for a notification: the prices the owner set, in the API's names. */
function offerSummary(input: OfferInput): string {
  if (input.price_gpu_hour !== undefined) return `${input.price_gpu_hour} USD per GPU-hour${input.min_bid_hour ? `, bids from ${input.min_bid_hour}` : ''}`
  return Object.entries(input.coin_prices ?? {})
    .map(([coin, p]) => `${p.on_demand} ${coin}/day`)
    .join(', ')
}

/**
 * Takes the offer off the market; the kept offer is dropped, so keep-on has nothing to re-publish.
 * `reason` (a bulk operation) goes into the operations log beside the call.
 */
export async function withdrawOffer({ deps, actor, audit, serverId, marketplace, reason = null }: Target & { reason?: string | null }): Promise<void> {
  const { link, account } = await writable(deps, actor, serverId, marketplace)
  await write(deps, actor, account, link, (key) => adapterFor(deps, marketplace).withdrawOffer(key, refOf(link)), reason)
  await withTransaction(deps.db, async (tx) => {
    const current = await findLink(tx, actor.tenantId, link.serverId, marketplace)
    if (current) await updateLink(tx, current.id, { remote: { ...current.remote, listed: false }, offer: null, offerPublishedAt: null })
    await markFleetDirty(tx, actor.tenantId) // the row's marketplace and price
    await recordAudit(tx, deps, audit, { operation: 'marketplaces.offer.withdraw', targetKind: 'server', targetId: link.serverId })
  })
}

function maintenanceApi(marketplace: MarketplaceId, deps: Deps) {
  const api = adapterFor(deps, marketplace).maintenance
  if (!api)
    throw MarketplaceErrors.notSupported(
      '',
      `${marketplace} has no maintenance API: to keep renters off the server, withdraw its offer (DELETE /marketplaces/links/{server_id}/${marketplace}/offer) and publish it again afterwards`,
    )
  return api
}

export async function announceMaintenance({ deps, actor, audit, serverId, marketplace, input }: Target & { input: Static<typeof MaintenanceBody> }) {
  const api = maintenanceApi(marketplace, deps)
  const { link, account } = await writable(deps, actor, serverId, marketplace)
  const now = deps.clock.nowUs()
  const start = parseTimestamp(input.starts_at)
  if (start === null) throw invalidField('marketplaces', '/starts_at', 'format', 'starts_at is not an RFC 3339 timestamp')
  if (start <= now || start > now + YEAR_US)
    throw invalidField('marketplaces', '/starts_at', 'out_of_range', 'starts_at must be in the future and at most a year ahead')
  const window = { startsAtS: Math.floor(start / 1_000_000), hours: input.hours, category: input.category, reason: input.reason ?? null }
  await write(deps, actor, account, link, (key) => api.announce(key, refOf(link), window))
  return withTransaction(deps.db, async (tx) => {
    const current = (await findLink(tx, actor.tenantId, link.serverId, marketplace)) ?? link
    const remote = {
      ...current.remote,
      maintenance_announced: true,
      maintenance_starts_at: formatTimestamp(window.startsAtS * 1_000_000),
      maintenance_hours: window.hours,
    }
    await updateLink(tx, current.id, { remote })
    await noteMaintenance(tx, deps, current, current.remote, remote)
    await recordAudit(tx, deps, audit, { operation: 'marketplaces.maintenance.announce', targetKind: 'server', targetId: link.serverId })
    return { link: linkView({ ...current, remote }) }
  })
}

export async function cancelMaintenance({ deps, actor, audit, serverId, marketplace }: Target): Promise<void> {
  const api = maintenanceApi(marketplace, deps)
  const { link, account } = await writable(deps, actor, serverId, marketplace)
  await write(deps, actor, account, link, (key) => api.cancel(key, refOf(link)))
  await withTransaction(deps.db, async (tx) => {
    const current = await findLink(tx, actor.tenantId, link.serverId, marketplace)
    if (current)
      await updateLink(tx, current.id, { remote: { ...current.remote, maintenance_announced: false, maintenance_starts_at: null, maintenance_hours: null } })
    await recordAudit(tx, deps, audit, { operation: 'marketplaces.maintenance.cancel', targetKind: 'server', targetId: link.serverId })
  })
}

/**
 * For fleet's maintenance declaration: each platform the server is linked to, whether it has a
 * maintenance API, and the request that announces the window there (or, on marketplace_b, the
 * withdrawal that keeps renters off instead). Nothing is sent: renters are notified only on request.
 */
export async function maintenanceAnnouncements(deps: Deps, tenantId: string, serverId: string) {
  return (await linksOfServers(deps.db, tenantId, [serverId]))
    .sort((a, b) => a.marketplace.localeCompare(b.marketplace))
    .map((l) => {
      const supported = adapterFor(deps, l.marketplace).maintenance !== null
      const base = `/api/v1/marketplaces/links/${l.serverId}/${l.marketplace}`
      return {
        marketplace: l.marketplace,
        external_machine_id: l.externalMachineId,
        supported,
        how: supported ? `PUT ${base}/maintenance {starts_at, hours, category, reason?}` : `no maintenance API: DELETE ${base}/offer to keep renters off`,
      }
    })
}
