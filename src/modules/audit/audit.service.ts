import type { Static } from '@sinclair/typebox'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { paginate } from '../../platform/cursor'
import { formatTimestamp, parseTimestamp } from '../../platform/time'
import type { AuditContext } from '../../platform/audit-context'
import { AuditErrors } from './audit.errors'
import type { AuditQuery } from './audit.model'
import { insertAudit, listAudit, type AuditRow } from './audit.repository'

/**
 * The audit trail: who did what in the tenant. Operations record themselves inside the
 * transaction of the change (`recordAudit`); the request wrapper adds a row for any other write
 * that reached a tenant (src/server.ts), so every write appears, refused ones included.
 */
function actorIdOf(actor: Actor): string | null {
  return actor.kind === 'user' ? actor.userId : (actor.tokenId ?? null)
}

type AuditFields = Pick<AuditRow, 'tenantId' | 'actorKind' | 'actorId' | 'operation'> &
  Partial<Pick<AuditRow, 'targetKind' | 'targetId' | 'ip' | 'userAgent' | 'outcome' | 'status' | 'requestId' | 'detail'>>

/** The one audit writer: every kind of row below is built here, with the same defaults and limits. */
async function writeAudit(tx: DbOrTx, deps: Pick<Deps, 'newId' | 'clock'>, f: AuditFields): Promise<void> {
  await insertAudit(tx, {
    id: deps.newId(),
    tenantId: f.tenantId,
    actorKind: f.actorKind,
    actorId: f.actorId,
    operation: f.operation,
    targetKind: f.targetKind ?? null,
    targetId: f.targetId ?? null,
    ip: f.ip ?? null,
    userAgent: f.userAgent?.slice(0, 256) ?? null,
    outcome: f.outcome ?? 'succeeded',
    status: f.status ?? null,
    requestId: f.requestId ?? null,
    detail: f.detail?.slice(0, 512) ?? null,
    createdAt: deps.clock.nowUs(),
  })
}

/** An operation of an authenticated request, in the transaction of the change. */
export async function recordAudit(
  tx: DbOrTx,
  deps: Pick<Deps, 'newId' | 'clock'>,
  ctx: AuditContext,
  entry: { operation: string; targetKind?: string | null; targetId?: string | null; outcome?: AuditRow['outcome']; status?: number | null },
): Promise<void> {
  await writeAudit(tx, deps, {
    tenantId: ctx.actor.tenantId,
    actorKind: ctx.actor.kind,
    actorId: actorIdOf(ctx.actor),
    ip: ctx.ip,
    userAgent: ctx.userAgent,
    requestId: ctx.requestId,
    ...entry,
  })
  ctx.markRecorded()
}

/** The wrapper's row for a write that did not record itself. */
export async function recordRequestAudit(
  deps: Deps,
  row: {
    tenantId: string
    actorKind: string
    actorId: string | null
    operation: string
    status: number
    ip: string
    userAgent: string | null
    requestId: string
  },
): Promise<void> {
  const outcome: AuditRow['outcome'] = row.status < 400 ? 'succeeded' : row.status === 401 || row.status === 403 ? 'denied' : 'failed'
  await withTransaction(deps.db, (tx) => writeAudit(tx, deps, { ...row, actorKind: row.actorKind as AuditRow['actorKind'], outcome }))
}

/** An event of a member outside an authenticated request (sign-in, signup, password reset). */
export async function recordMemberEvent(
  tx: DbOrTx,
  deps: Pick<Deps, 'newId' | 'clock'>,
  who: { tenantId: string; userId: string; ip: string | null; userAgent: string | null },
  operation: string,
  outcome: AuditRow['outcome'] = 'succeeded',
): Promise<void> {
  await writeAudit(tx, deps, {
    tenantId: who.tenantId,
    actorKind: 'user',
    actorId: who.userId,
    operation,
    targetKind: 'user',
    targetId: who.userId,
    ip: who.ip,
    userAgent: who.userAgent,
    outcome,
  })
}

/** A change the service made on its own (a job): actor kind system. */
export async function recordSystemEvent(tx: DbOrTx, deps: Pick<Deps, 'newId' | 'clock'>, tenantId: string, operation: string, detail?: string): Promise<void> {
  await writeAudit(tx, deps, { tenantId, actorKind: 'system', actorId: null, operation, targetKind: 'tenant', targetId: tenantId, detail })
}

export async function listAuditEntries({ deps, actor, input }: { deps: Deps; actor: Actor; input: Static<typeof AuditQuery> }) {
  const fromUs = input.from === undefined ? undefined : parseTimestamp(input.from)
  const toUs = input.to === undefined ? undefined : parseTimestamp(input.to)
  if (fromUs === null) throw AuditErrors.badFrom()
  if (toUs === null) throw AuditErrors.badTo()
  const filter = { actorKind: input.actor_kind, actorId: input.actor_id, operation: input.operation, outcome: input.outcome, fromUs, toUs }
  return await paginate(deps.keys.cursor, {
    scope: `audit:${actor.tenantId}:${JSON.stringify(filter)}`,
    input,
    fetch: (after: { id: string } | undefined, take) => listAudit(deps.db, actor.tenantId, { ...filter, beforeId: after?.id }, take),
    position: (r) => ({ id: r.id }),
    view: auditView,
  })
}

function auditView(r: AuditRow) {
  return {
    id: r.id,
    actor: { kind: r.actorKind, id: r.actorId },
    operation: r.operation,
    target: r.targetKind ? { kind: r.targetKind, id: r.targetId } : null,
    ip: r.ip,
    user_agent: r.userAgent,
    outcome: r.outcome,
    status: r.status,
    request_id: r.requestId,
    detail: r.detail,
    created_at: formatTimestamp(r.createdAt),
  }
}
