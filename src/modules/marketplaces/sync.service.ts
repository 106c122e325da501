import { withTransaction } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { openKey, recordOutcome } from './accounts.service'
import type { RemoteMachine } from './marketplaces.adapter'
import { connectedAccounts, type AccountRow } from './marketplaces.repository'
import { adapterFor } from './marketplaces.registry'
import { linksOfAccount, updateLink, type LinkState } from './links.repository'
import { callPlatform } from './operations.service'
import { announceEnded, refreshMarketRentals } from './rentals.service'

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

type Tally = { ok: number; failed: number; skipped: number; refreshed: number; stale: number; conflict: number }

export async function syncMarketplaces(deps: Deps): Promise<string> {
  const accounts = connectedAccounts(deps.db)
  const tally: Tally = { ok: 0, failed: 0, skipped: 0, refreshed: 0, stale: 0, conflict: 0 }
  let next = 0
  const worker = async () => {
    while (next < accounts.length) {
      const account = accounts[next++]!
      try {
        await syncAccount(deps, account, tally)
      } catch (error) {
        // A defect with one account (say, a key sealed under another SECRET_KEY) stops only that one.
        tally.failed++
        deps.log.error('marketplace sync of one account failed', { marketplace: account.marketplace, tenant_id: account.tenantId, error })
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, accounts.length) }, worker))
  return (
    `${accounts.length} accounts: ${tally.ok} read, ${tally.failed} failed, ${tally.skipped} changed meanwhile; ` +
    `links: ${tally.refreshed} refreshed, ${tally.stale} stale, ${tally.conflict} in conflict`
  )
}

/** The job acts for the tenant as the system (the operations log shows `system`). */
function systemActor(tenantId: string): Actor {
  return {
    kind: 'system',
    via: 'system',
    tenantId,
    userId: null,
    role: null,
    scopes: null,
    serverAllowlist: null,
    tenant: { planCode: null, accountState: 'active' },
  }
}

async function syncAccount(deps: Deps, account: AccountRow, tally: Tally): Promise<void> {
  const adapter = adapterFor(deps, account.marketplace)
  const asked = await callPlatform(deps, systemActor(account.tenantId), null, async () => {
    const key = openKey(deps, account)
    const machines = await adapter.listMachines(key)
    return { machines, holdingUsd: await adapter.readHolding(key, machines) }
  })
  const ended = withTransaction(deps.db, (tx) => {
    if (!recordOutcome(tx, deps, account, asked.ok ? { ok: true, holdingUsd: asked.value.holdingUsd } : asked)) {
      tally.skipped++
      return []
    }
    if (!asked.ok) {
      tally.failed++
      return []
    }
    tally.ok++
    const links = linksOfAccount(tx, account.id)
    const byId = new Map<string, RemoteMachine>(asked.value.machines.map((m) => [m.externalMachineId, m]))
    const claims = new Map<string, number>()
    for (const l of links) claims.set(l.externalMachineId, (claims.get(l.externalMachineId) ?? 0) + 1)
    const now = deps.clock.nowUs()
    for (const link of links) {
      const machine = byId.get(link.externalMachineId)
      if (!machine) {
        // The machine stopped appearing: the link is kept with its last projection.
        if (link.state !== 'stale') updateLink(tx, link.id, { state: 'stale' })
        tally.stale++
        continue
      }
      const state: LinkState = (claims.get(link.externalMachineId) ?? 0) > 1 ? 'conflict' : 'linked'
      updateLink(tx, link.id, {
        state,
        lastSeenAt: now,
        remote: machine.remote,
        marketplaceB: link.marketplace === 'marketplace_b' ? machine.marketplaceB : null,
      })
      tally.refreshed++
      if (state === 'conflict') tally.conflict++
    }
    return refreshMarketRentals(
      tx,
      deps,
      account.tenantId,
      links.map((l) => l.serverId),
    )
  })
  announceEnded(deps, ended)
}
