import type { Deps } from '../../../platform/context'
import { openKey } from '../accounts/accounts.service'
import { connectedAccounts, findAccount } from '../accounts/marketplaces.repository'
import type { MarketplaceId, PayoutRead, WalletRead } from '../adapters/marketplaces.adapter'
import { adapterFor } from '../adapters/marketplaces.registry'
import { callPlatform, systemActor } from '../operations/operations.service'

/**
 * What payout reconciliation reads of the marketplaces (docs/marketplaces.md "Payouts reconciled"):
 * the account's invoice / payout history (marketplace_a) and its wallet balances (marketplace_b),
 * with the tenant's stored key, logged as the system in the operations log.
 */

/** Every (tenant, marketplace) with a connected account, in a stable order. */
export async function connectedMarketplaces(deps: Deps): Promise<{ tenantId: string; marketplace: MarketplaceId }[]> {
  return (await connectedAccounts(deps.db)).map((a) => ({ tenantId: a.tenantId, marketplace: a.marketplace }))
}

/** A read of the platform: `none` when it has no such report or the account is not connected. */
export type PlatformRead<T> = { kind: 'none' } | { kind: 'read'; items: T[] } | { kind: 'failed'; failure: string; message: string }

async function readWith<T>(
  deps: Deps,
  tenantId: string,
  marketplace: MarketplaceId,
  pick: (a: ReturnType<typeof adapterFor>) => ((apiKey: string) => Promise<T[]>) | null,
  reason: string,
): Promise<PlatformRead<T>> {
  const read = pick(adapterFor(deps, marketplace))
  const account = await findAccount(deps.db, tenantId, marketplace)
  if (!read || !account || account.status !== 'connected') return { kind: 'none' }
  const asked = await callPlatform(deps, systemActor(tenantId), null, () => read(openKey(deps, account)), reason)
  return asked.ok ? { kind: 'read', items: asked.value } : { kind: 'failed', failure: asked.failure.failure, message: asked.failure.message }
}

/** The invoice / payout history with a start in [fromS, toS] (unix seconds). */
export function platformPayouts(deps: Deps, tenantId: string, marketplace: MarketplaceId, fromS: number, toS: number): Promise<PlatformRead<PayoutRead>> {
  return readWith(deps, tenantId, marketplace, (a) => (a.payouts ? (key) => a.payouts!(key, fromS, toS) : null), 'payout history')
}

/** The account's wallet balances per coin. */
export function platformWallets(deps: Deps, tenantId: string, marketplace: MarketplaceId): Promise<PlatformRead<WalletRead>> {
  return readWith(deps, tenantId, marketplace, (a) => a.wallets, 'wallet balances')
}
