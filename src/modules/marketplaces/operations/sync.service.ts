import { withTransaction } from '../../../../db/client'
import type { Deps } from '../../../platform/context'
import { DomainError } from '../../../platform/domain-error'
import type { TenantWalk } from '../../../platform/jobs'
import { parseTimestamp } from '../../../platform/time'
import { keepOnOf, markFleetDirty, recordServerEvent } from '../../fleet'
import { snapshotMarkets } from '../market/market.service'
import type { OfferInput } from '../offers/offers.mapping'
import { applyOffer, offerWriteOf, write } from '../offers/offers.service'
import { openKey, recordOutcome } from '../accounts/accounts.service'
import type { RemoteMachine } from '../adapters/marketplaces.adapter'
import { connectedAccounts, type AccountRow } from '../accounts/marketplaces.repository'
import { adapterFor } from '../adapters/marketplaces.registry'
import { linksOfAccount, updateLink, type LinkState } from '../links/links.repository'
import { callPlatform, systemActor } from './operations.service'
import { announceEnded, noteMaintenance, refreshMarketRentals } from '../links/rentals.service'
import { type ReportTally, syncRenterReports } from '../renter-reports/renter-reports.service'
import { endDatesDue, extendEndDate } from '../listing/listing.service'

/**
 * The marketplaces.sync job (docs/marketplaces.md "Sync"). For every connected account of every
 * tenant it reads the live machine list with the stored key (paced per key by the adapter, logged
 * in the operations log as the system), then in one transaction: records the outcome on the
 * connection, refreshes each link's projection, marks a link whose machine vanished `stale` (kept,
 * with its last projection), puts links that claim one machine twice in `conflict`, and brings each
 * linked server's marketplace rental fact up to date. A failed read changes no link and no rental
 * fact: what was last known stays until the platform answers again.
 */

/** Accounts read at once: different keys are paced independently, so they may overlap. */
const CONCURRENCY = 4

type Tally = {
  ok: number
  failed: number
  skipped: number
  refreshed: number
  stale: number
  conflict: number
  republished: number
  republishFailed: number
  extended: number
  extendFailed: number
  reports: ReportTally
}

export async function syncMarketplaces(deps: Deps, tenants: TenantWalk): Promise<string> {
  const accounts = await connectedAccounts(deps.db)
  const tally: Tally = {
    ok: 0,
    failed: 0,
    skipped: 0,
    refreshed: 0,
    stale: 0,
    conflict: 0,
    republished: 0,
    republishFailed: 0,
    extended: 0,
    extendFailed: 0,
    reports: { read: 0, fresh: 0, failed: 0 },
  }
  let next = 0
  const worker = async () => {
    while (next < accounts.length) {
      const account = accounts[next++]!
      // A defect with one account (say, a key sealed under another SECRET_KEY) stops only that one,
      // in the job's per-tenant boundary: logged, reported, and left out for a while.
      const done = await tenants.run(account.tenantId, () => syncAccount(deps, account, tally).then(() => true), account.marketplace)
      if (!done) tally.failed++
    }
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, accounts.length) }, worker))
  const market = await snapshotMarkets(deps)
  return (
    `${accounts.length} accounts: ${tally.ok} read, ${tally.failed} failed, ${tally.skipped} changed meanwhile; ` +
    `links: ${tally.refreshed} refreshed, ${tally.stale} stale, ${tally.conflict} in conflict; ` +
    `keep-on: ${tally.republished} re-published, ${tally.republishFailed} failed; ` +
    `end dates: ${tally.extended} extended, ${tally.extendFailed} failed; ` +
    `renter reports: ${tally.reports.read} machines read, ${tally.reports.fresh} new, ${tally.reports.failed} failed; ${market}`
  )
}

async function syncAccount(deps: Deps, account: AccountRow, tally: Tally): Promise<void> {
  const adapter = adapterFor(deps, account.marketplace)
  const asked = await callPlatform(deps, systemActor(account.tenantId), null, async () => {
    const key = openKey(deps, account)
    const machines = await adapter.listMachines(key)
    return { machines, holdingUsd: await adapter.readHolding(key, machines) }
  })
  // The transaction answers what it did, and the tally and the keep-on list are updated after it
  // commits: on PostgreSQL a transaction that lost a serialization conflict runs its callback again,
  // and counts or pushes made inside it would count twice (the tally is shared by CONCURRENCY workers too).
  const synced = await withTransaction(deps.db, async (tx) => {
    if (!(await recordOutcome(tx, deps, account, asked.ok ? { ok: true, holdingUsd: asked.value.holdingUsd } : asked))) return { outcome: 'skipped' as const }
    if (!asked.ok) return { outcome: 'failed' as const }
    const counts = { refreshed: 0, stale: 0, conflict: 0 }
    const relist: string[] = []
    const links = await linksOfAccount(tx, account.id)
    const byId = new Map<string, RemoteMachine>(asked.value.machines.map((m) => [m.externalMachineId, m]))
    const claims = new Map<string, number>()
    for (const l of links) claims.set(l.externalMachineId, (claims.get(l.externalMachineId) ?? 0) + 1)
    const now = deps.clock.nowUs()
    for (const link of links) {
      const machine = byId.get(link.externalMachineId)
      if (!machine) {
        // The machine stopped appearing: the link is kept with its last projection.
        if (link.state !== 'stale') await updateLink(tx, link.id, { state: 'stale' })
        counts.stale++
        continue
      }
      const state: LinkState = (claims.get(link.externalMachineId) ?? 0) > 1 ? 'conflict' : 'linked'
      await noteMaintenance(tx, deps, link, link.remote, machine.remote)
      await updateLink(tx, link.id, {
        state,
        lastSeenAt: now,
        remote: machine.remote,
        marketplaceB: link.marketplace === 'marketplace_b' ? machine.marketplaceB : null,
      })
      counts.refreshed++
      if (state === 'conflict') counts.conflict++
    }
    // Keep-on: an offer gpuhq published, on a machine the platform now shows unlisted, whose server
    // the owner asked to keep on this marketplace, is published again after the transaction.
    for (const link of links) {
      const machine = byId.get(link.externalMachineId)
      if (machine?.remote.listed === false && link.offer && (await keepOnOf(tx, link.serverId)).includes(account.marketplace)) relist.push(link.id)
    }
    const ended = await refreshMarketRentals(
      tx,
      deps,
      account.tenantId,
      links.map((l) => l.serverId),
    )
    return { outcome: 'ok' as const, counts, relist, ended }
  })
  if (synced.outcome !== 'ok') {
    tally[synced.outcome]++
    return
  }
  tally.ok++
  tally.refreshed += synced.counts.refreshed
  tally.stale += synced.counts.stale
  tally.conflict += synced.counts.conflict
  const { relist, ended } = synced
  await announceEnded(deps, ended)
  for (const id of relist) await keepOn(deps, account, id, tally)
  // Rolling end dates (docs/marketplaces.md "Rolling end dates"): after keep-on, on the links as this sync left them.
  if (asked.ok) {
    const machines = new Map<string, RemoteMachine>(asked.value.machines.map((m) => [m.externalMachineId, m]))
    for (const due of endDatesDue(deps, await linksOfAccount(deps.db, account.id), machines)) {
      if (await extendEndDate(deps, account, due)) tally.extended++
      else tally.extendFailed++
    }
  }
  // Only after a list the platform answered and this sync recorded: the links are as fresh as they get.
  if (asked.ok) await syncRenterReports(deps, account, asked.value.machines, tally.reports)
}

/**
 * Publishes the kept offer again (an end_date already past is left out), logged under the server as
 * the system with the reason. A failure is in the operations log too; the next sync tries again.
 */
async function keepOn(deps: Deps, account: AccountRow, linkId: string, tally: Tally): Promise<void> {
  const link = (await linksOfAccount(deps.db, account.id)).find((l) => l.id === linkId)
  if (!link?.offer) return
  const input = { ...link.offer } as OfferInput
  if (input.end_date !== undefined && (parseTimestamp(input.end_date) ?? 0) <= deps.clock.nowUs()) delete input.end_date
  try {
    const offer = offerWriteOf(link, input)
    await write(deps, systemActor(account.tenantId), account, link, (key) => adapterFor(deps, account.marketplace).publishOffer(key, offer), KEEP_ON_REASON)
    await withTransaction(deps.db, async (tx) => {
      const current = (await linksOfAccount(tx, account.id)).find((l) => l.id === linkId)
      if (!current) return
      const next = applyOffer(deps, current, input, offer)
      await updateLink(tx, current.id, { remote: next.remote, marketplaceB: next.marketplaceB, offer: next.offer, offerPublishedAt: next.offerPublishedAt })
      await markFleetDirty(tx, account.tenantId) // listed again: the row's marketplace and price
      await recordServerEvent(
        tx,
        deps,
        { id: current.serverId, tenantId: account.tenantId },
        {
          kind: 'marketplace.offer_republished',
          message: `keep-on: ${account.marketplace} showed the machine unlisted; the last offer was published again`,
          data: { marketplace: account.marketplace },
        },
      )
    })
    tally.republished++
  } catch (error) {
    if (!(error instanceof DomainError)) throw error
    tally.republishFailed++
  }
}

const KEEP_ON_REASON = 'keep-on: the platform showed the machine unlisted'
