import type { Static } from '@sinclair/typebox'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { formatNullableMoney, parseMoney } from '../../platform/money'
import { hmac, open, seal } from '../../platform/secrets'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { MarketplaceError, type MarketplaceId, type RemoteMachine } from './marketplaces.adapter'
import { MarketplaceErrors } from './marketplaces.errors'
import type { ConnectBody } from './marketplaces.model'
import { accountsOf, deleteAccount, findAccount, saveAccount, type AccountRow } from './marketplaces.repository'
import { adapterFor } from './marketplaces.registry'
import { askPlatform } from './operations.service'

/**
 * Connected marketplace accounts (docs/marketplaces.md "Connecting an account"). A key is checked
 * with the platform before anything is stored; a rejected key is never written, and a platform
 * that cannot be asked leaves the stored connection exactly as it was. The key is sealed at rest
 * and appears in no answer, log line, error or audit row.
 */

function connectionView(a: AccountRow) {
  return {
    marketplace: a.marketplace,
    status: a.status,
    owner: a.owner,
    key_hash: a.keyHash,
    connected_at: formatTimestamp(a.connectedAt),
    updated_at: formatTimestamp(a.updatedAt),
    last_success_at: formatNullableTimestamp(a.lastSuccessAt),
    last_failure_at: formatNullableTimestamp(a.lastFailureAt),
    last_failure: a.lastFailure,
    holding_usd: formatNullableMoney(a.holdingMicros),
  }
}

/** The keyed hash a client compares to tell the same key from a new one (never the key itself). */
function keyHashOf(deps: Deps, marketplace: MarketplaceId, apiKey: string): string {
  return hmac(deps.keys.marketplaceKeyHash, `${marketplace}\n${apiKey}`).toString('base64url').slice(0, 43)
}

export async function connectAccount({
  deps,
  actor,
  audit,
  marketplace,
  input,
}: {
  deps: Deps
  actor: Actor
  audit: AuditContext
  marketplace: MarketplaceId
  input: Static<typeof ConnectBody>
}) {
  const apiKey = input.api_key.trim()
  const identity = await askPlatform(deps, actor, null, () => adapterFor(deps, marketplace).verifyKey(apiKey), MarketplaceErrors.fromAdapter)
  return withTransaction(deps.db, (tx) => {
    const now = deps.clock.nowUs()
    const before = findAccount(tx, actor.tenantId, marketplace)
    const row: AccountRow = {
      id: before?.id ?? deps.newId(),
      tenantId: actor.tenantId,
      marketplace,
      status: 'connected',
      keyBox: seal(deps.keys.marketplaceKeys, apiKey, aad(actor.tenantId, marketplace)).toString('base64'),
      keyHash: keyHashOf(deps, marketplace, apiKey),
      owner: identity.owner.slice(0, 256),
      holdingMicros: identity.holdingUsd === null ? null : parseMoney(identity.holdingUsd),
      connectedAt: before?.connectedAt ?? now,
      updatedAt: now,
      lastSuccessAt: now,
      // Re-sending a key replaces it and clears the last failure, without disconnecting.
      lastFailureAt: null,
      lastFailure: null,
    }
    saveAccount(tx, row)
    recordAudit(tx, deps, audit, { operation: before ? 'marketplaces.key.replace' : 'marketplaces.connect', targetKind: 'marketplace', targetId: marketplace })
    return connectionView(row)
  })
}

/** The AAD that binds a sealed key to its tenant and marketplace (a box copied elsewhere won't open). */
function aad(tenantId: string, marketplace: MarketplaceId): string {
  return `marketplace-key\n${tenantId}\n${marketplace}`
}

/**
 * The live machine list of a connected account, for a request about one server: a key marked
 * invalid is not sent again (409), the calls are logged under the server, and a platform failure is
 * the stored key's (409 rejected or lacking permission, 503 unreachable; the connection unchanged).
 */
export function liveMachines(deps: Deps, actor: Actor, account: AccountRow, serverId: string): Promise<RemoteMachine[]> {
  if (account.status === 'invalid_key')
    throw MarketplaceErrors.fromStoredKey(new MarketplaceError(account.marketplace, 'rejected_key', 'stored key marked invalid'))
  return askPlatform(deps, actor, serverId, () => adapterFor(deps, account.marketplace).listMachines(openKey(deps, account)), MarketplaceErrors.fromStoredKey)
}

/** The stored key of a connected account, opened for a call to its platform (never for an answer, a log or an error). */
function openKey(deps: Deps, account: AccountRow): string {
  return open(deps.keys.marketplaceKeys, Buffer.from(account.keyBox, 'base64'), aad(account.tenantId, account.marketplace)).toString('utf8')
}

export function listAccounts({ deps, actor }: { deps: Deps; actor: Actor }) {
  return { items: accountsOf(deps.db, actor.tenantId).map(connectionView) }
}

export function disconnectAccount({ deps, actor, audit, marketplace }: { deps: Deps; actor: Actor; audit: AuditContext; marketplace: MarketplaceId }): void {
  withTransaction(deps.db, (tx: DbOrTx) => {
    if (deleteAccount(tx, actor.tenantId, marketplace) === 0) throw MarketplaceErrors.notConnected()
    recordAudit(tx, deps, audit, { operation: 'marketplaces.disconnect', targetKind: 'marketplace', targetId: marketplace })
  })
}
