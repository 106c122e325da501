import { asc, eq } from 'drizzle-orm'
import { marketplaceAccounts, marketplaceLinks } from '../../../../db/schema/marketplaces'
import type { DbOrTx } from '../../../../db/client'

/**
 * What the alerts module reads of marketplaces' state (docs/alerts.md): every connected account with
 * the outcome of its last call, and every link the sync marked stale. Read-only, for every tenant.
 */

/** Every account of every tenant: `status` (connected, invalid_key) and the last failure, kept until the next success. */
export function accountHealth(db: DbOrTx) {
  return db
    .select({
      tenantId: marketplaceAccounts.tenantId,
      marketplace: marketplaceAccounts.marketplace,
      status: marketplaceAccounts.status,
      lastFailure: marketplaceAccounts.lastFailure,
      lastFailureAt: marketplaceAccounts.lastFailureAt,
      updatedAt: marketplaceAccounts.updatedAt,
    })
    .from(marketplaceAccounts)
    .orderBy(asc(marketplaceAccounts.tenantId), asc(marketplaceAccounts.marketplace))
    .all()
}

/**
 * Every link in state `stale` (its machine stopped appearing in the platform's listing), with the
 * time of its account's last successful read: the latest sync that found the machine missing.
 */
export function staleLinks(db: DbOrTx) {
  return db
    .select({
      tenantId: marketplaceLinks.tenantId,
      serverId: marketplaceLinks.serverId,
      marketplace: marketplaceLinks.marketplace,
      externalMachineId: marketplaceLinks.externalMachineId,
      lastSeenAt: marketplaceLinks.lastSeenAt,
      checkedAt: marketplaceAccounts.lastSuccessAt,
    })
    .from(marketplaceLinks)
    .innerJoin(marketplaceAccounts, eq(marketplaceAccounts.id, marketplaceLinks.accountId))
    .where(eq(marketplaceLinks.state, 'stale'))
    .orderBy(asc(marketplaceLinks.tenantId), asc(marketplaceLinks.id))
    .all()
}
