import type { DbOrTx } from '../../../../db/client'
import type { Actor } from '../../../platform/access'
import type { Deps } from '../../../platform/context'
import { paginate } from '../../../platform/cursor'
import { formatTimestamp } from '../../../platform/time'
import { withTransaction } from '../../../../db/client'
import type { DomainError } from '../../../platform/domain-error'
import { MarketplaceError, type MarketplaceCall } from '../adapters/marketplaces.adapter'
import { callsOf } from '../adapters/marketplaces.registry'
import { insertOperations, operationsOf, type OperationRow } from '../accounts/marketplaces.repository'

/**
 * The operations log (docs/marketplaces.md "Operations log"): every call gpuhq made to a platform
 * for a tenant, with who asked, the outcome and the latency. The adapters never hand a key or a
 * query string here, so the log cannot hold one.
 */
async function recordCalls(tx: DbOrTx, deps: Deps, actor: Actor, calls: MarketplaceCall[], serverId: string | null, reason: string | null): Promise<void> {
  await insertOperations(
    tx,
    calls.map(
      (c): OperationRow => ({
        id: deps.newId(),
        tenantId: actor.tenantId,
        marketplace: c.marketplace,
        serverId,
        operation: c.operation,
        method: c.method,
        path: c.path.slice(0, 512),
        status: c.status,
        outcome: c.outcome,
        latencyMs: Math.max(0, Math.round(c.latencyMs)),
        reason,
        actorKind: actor.kind,
        actorId: actor.kind === 'user' ? actor.userId : (actor.tokenId ?? null),
        startedAt: c.startedAtUs,
      }),
    ),
  )
}

/**
 * The one way a service asks a platform: runs `fn`, writes every call it made to the operations log
 * (under `serverId` when the request is about a server) whatever the outcome, and answers the
 * result or the platform's failure. Anything else `fn` throws is a defect and propagates.
 */
export async function callPlatform<T>(
  deps: Deps,
  actor: Actor,
  serverId: string | null,
  fn: () => Promise<T>,
  reason: string | null = null,
): Promise<{ ok: true; value: T } | { ok: false; failure: MarketplaceError }> {
  const asked = await callsOf(fn)
  if (asked.calls.length) await withTransaction(deps.db, (tx) => recordCalls(tx, deps, actor, asked.calls, serverId, reason))
  if (asked.error === undefined) return { ok: true, value: asked.result as T }
  if (asked.error instanceof MarketplaceError) return { ok: false, failure: asked.error }
  throw asked.error
}

/** callPlatform for a request: a platform failure becomes the module's error through `mapFailure`. */
export async function askPlatform<T>(
  deps: Deps,
  actor: Actor,
  serverId: string | null,
  fn: () => Promise<T>,
  mapFailure: (e: MarketplaceError) => DomainError,
): Promise<T> {
  const asked = await callPlatform(deps, actor, serverId, fn)
  if (asked.ok) return asked.value
  throw mapFailure(asked.failure)
}

/** gpuhq acting for the tenant on its own (the sync, keep-on): the operations log shows `system`. */
export { systemActor } from '../../../platform/audit-context'

function operationView(o: OperationRow) {
  return {
    id: o.id,
    marketplace: o.marketplace,
    server_id: o.serverId,
    operation: o.operation,
    method: o.method,
    path: o.path,
    status: o.status,
    outcome: o.outcome,
    latency_ms: o.latencyMs,
    reason: o.reason,
    actor: { kind: o.actorKind, id: o.actorId },
    at: formatTimestamp(o.startedAt),
  }
}

/** Newest first, fleet-wide or for one server (its id already checked by the access layer and the caller). */
export function listOperations({ deps, actor, serverId, input }: { deps: Deps; actor: Actor; serverId?: string; input: { cursor?: string; limit?: number } }) {
  return paginate(deps.keys.cursor, {
    scope: `marketplace-operations:${actor.tenantId}:${serverId ?? '*'}`,
    input,
    fetch: (after: { id: string } | undefined, take) => operationsOf(deps.db, actor.tenantId, { serverId, beforeId: after?.id }, take),
    position: (o) => ({ id: o.id }),
    view: operationView,
  })
}
