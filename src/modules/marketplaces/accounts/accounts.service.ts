import type { Static } from '@sinclair/typebox'
import { withTransaction, type DbOrTx } from '../../../../db/client'
import type { Actor } from '../../../platform/access'
import type { Deps } from '../../../platform/context'
import { formatNullableMoney, parseMoney } from '../../../platform/money'
import { hmac, open, seal } from '../../../platform/secrets'
import { formatNullableTimestamp, formatTimestamp } from '../../../platform/time'
import { recordAudit, type AuditContext } from '../../audit'
import { MarketplaceError, type MarketplaceFailure, type MarketplaceId, type RemoteMachine } from '../adapters/marketplaces.adapter'
import { MarketplaceErrors } from '../marketplaces.errors'
import type { ConnectBody } from '../marketplaces.model'
import { accountsOf, deleteAccount, findAccount, saveAccount, updateAccount, type AccountRow } from './marketplaces.repository'
import { adapterFor } from '../adapters/marketplaces.registry'
import { askPlatform, callPlatform } from '../operations/operations.service'
import { linksOfAccount } from '../links/links.repository'
import { announceEnded, refreshMarketRentals } from '../links/rentals.service'

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
  return withTransaction(deps.db, async (tx) => {
    const now = deps.clock.nowUs()
    const before = await findAccount(tx, actor.tenantId, marketplace)
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
    await saveAccount(tx, row)
    await recordAudit(tx, deps, audit, {
      operation: before ? 'marketplaces.key.replace' : 'marketplaces.connect',
      targetKind: 'marketplace',
      targetId: marketplace,
    })
    return connectionView(row)
  })
}

/** The AAD that binds a sealed key to its tenant and marketplace (a box copied elsewhere won't open). */
function aad(tenantId: string, marketplace: MarketplaceId): string {
  return `marketplace-key\n${tenantId}\n${marketplace}`
}

/**
 * The live machine list of a connected account, for a request about one server: a key marked
 * invalid is not sent again (409), the calls are logged under the server, the outcome is recorded
 * on the connection (recordOutcome), and a platform failure is the stored key's (409 rejected or
 * lacking permission, 503 unreachable).
 */
export async function liveMachines(deps: Deps, actor: Actor, account: AccountRow, serverId: string): Promise<RemoteMachine[]> {
  if (account.status === 'invalid_key')
    throw MarketplaceErrors.fromStoredKey(new MarketplaceError(account.marketplace, 'rejected_key', 'stored key marked invalid'))
  const asked = await callPlatform(deps, actor, serverId, () => adapterFor(deps, account.marketplace).listMachines(openKey(deps, account)))
  await withTransaction(deps.db, (tx) => recordOutcome(tx, deps, account, asked.ok ? { ok: true } : asked))
  if (asked.ok) return asked.value
  throw MarketplaceErrors.fromStoredKey(asked.failure)
}

/**
 * Records on the connection how a call with its stored key went: a success stamps last_success_at
 * and clears the last failure (and sets the holding amount when one was read); a failure stamps
 * last_failure_at and its reason, and only a rejection by the platform marks the key invalid_key.
 * Answers false, recording nothing, when the connection was removed or its key replaced meanwhile
 * (the outcome belongs to a key that is gone).
 */
export async function recordOutcome(
  tx: DbOrTx,
  deps: Deps,
  account: AccountRow,
  outcome: { ok: true; holdingUsd?: string | null } | { ok: false; failure: MarketplaceError },
): Promise<boolean> {
  const current = await findAccount(tx, account.tenantId, account.marketplace)
  if (!current || current.id !== account.id || current.keyHash !== account.keyHash) return false
  const now = deps.clock.nowUs()
  if (outcome.ok) {
    const holdingMicros = outcome.holdingUsd ? parseMoney(outcome.holdingUsd) : current.holdingMicros
    await updateAccount(tx, current.id, { lastSuccessAt: now, lastFailureAt: null, lastFailure: null, holdingMicros })
    return true
  }
  const rejected = outcome.failure.failure === 'rejected_key'
  await updateAccount(tx, current.id, {
    lastFailureAt: now,
    lastFailure: `${FAILURE_LABEL[outcome.failure.failure]}: ${outcome.failure.message}`.slice(0, 512),
    ...(rejected && current.status !== 'invalid_key' ? { status: 'invalid_key' as const, updatedAt: now } : {}),
  })
  return true
}

const FAILURE_LABEL: Record<MarketplaceFailure, string> = {
  rejected_key: 'the marketplace rejected the key',
  missing_permission: 'the key lacks a permission gpuhq needs',
  unavailable: 'the marketplace could not be reached',
  refused: 'the marketplace refused the request',
}

/** The stored key of a connected account, opened for a call to its platform (never for an answer, a log or an error). */
export function openKey(deps: Deps, account: AccountRow): string {
  return open(deps.keys.marketplaceKeys, Buffer.from(account.keyBox, 'base64'), aad(account.tenantId, account.marketplace)).toString('utf8')
}

export async function listAccounts({ deps, actor }: { deps: Deps; actor: Actor }) {
  return { items: (await accountsOf(deps.db, actor.tenantId)).map(connectionView) }
}

export async function disconnectAccount({
  deps,
  actor,
  audit,
  marketplace,
}: {
  deps: Deps
  actor: Actor
  audit: AuditContext
  marketplace: MarketplaceId
}): Promise<void> {
  const ended = await withTransaction(deps.db, async (tx: DbOrTx) => {
    const account = await findAccount(tx, actor.tenantId, marketplace)
    if (!account) throw MarketplaceErrors.notConnected()
    const linked = (await linksOfAccount(tx, account.id)).map((l) => l.serverId)
    await deleteAccount(tx, actor.tenantId, marketplace) // its links go by cascade
    await recordAudit(tx, deps, audit, { operation: 'marketplaces.disconnect', targetKind: 'marketplace', targetId: marketplace })
    // The marketplace no longer reports rentals on the servers it was linked to.
    return refreshMarketRentals(tx, deps, actor.tenantId, linked)
  })
  await announceEnded(deps, ended)
}
