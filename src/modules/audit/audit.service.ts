import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { decodeCursor, toPage } from '../../platform/cursor'
import { problems } from '../../platform/problem'
import { formatTimestamp, parseTimestamp } from '../../platform/time'
import type { AuditContext } from './audit.context'
import { insertAudit, listAudit, type AuditRow } from './audit.repository'

/**
 * The audit trail: who did what in the tenant. Operations record themselves inside the
 * transaction of the change (`recordAudit`); the request wrapper adds a row for any other write
 * that reached a tenant (src/server.ts), so every write appears, refused ones included.
 */
export function actorIdOf(actor: Actor): string | null {
  return actor.kind === 'user' ? actor.userId : (actor.tokenId ?? null)
}

export function recordAudit(
  tx: DbOrTx,
  deps: Pick<Deps, 'newId' | 'clock'>,
  ctx: AuditContext | { actor: Actor; ip: string | null; userAgent: string | null; requestId: string | null; markRecorded?: () => void },
  entry: { operation: string; targetKind?: string | null; targetId?: string | null; outcome?: AuditRow['outcome']; status?: number | null },
): void {
  insertAudit(tx, {
    id: deps.newId(),
    tenantId: ctx.actor.tenantId,
    actorKind: ctx.actor.kind,
    actorId: actorIdOf(ctx.actor),
    operation: entry.operation,
    targetKind: entry.targetKind ?? null,
    targetId: entry.targetId ?? null,
    ip: ctx.ip,
    userAgent: ctx.userAgent,
    outcome: entry.outcome ?? 'succeeded',
    status: entry.status ?? null,
    requestId: ctx.requestId,
    detail: null,
    createdAt: deps.clock.nowUs(),
  })
  ctx.markRecorded?.()
}

/** The wrapper's row for a write that did not record itself. */
export function recordRequestAudit(
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
): void {
  const outcome: AuditRow['outcome'] = row.status < 400 ? 'succeeded' : row.status === 401 || row.status === 403 ? 'denied' : 'failed'
  withTransaction(deps.db, (tx) =>
    insertAudit(tx, {
      id: deps.newId(),
      tenantId: row.tenantId,
      actorKind: row.actorKind as AuditRow['actorKind'],
      actorId: row.actorId,
      operation: row.operation,
      targetKind: null,
      targetId: null,
      ip: row.ip,
      userAgent: row.userAgent?.slice(0, 256) ?? null,
      outcome,
      status: row.status,
      requestId: row.requestId,
      detail: null,
      createdAt: deps.clock.nowUs(),
    }),
  )
}

export type AuditQuery = {
  cursor?: string
  limit?: number
  actor_kind?: AuditRow['actorKind']
  actor_id?: string
  operation?: string
  outcome?: AuditRow['outcome']
  from?: string
  to?: string
}

export function listAuditEntries({ deps, actor, input }: { deps: Deps; actor: Actor; input: AuditQuery }) {
  const limit = input.limit ?? 50
  const fromUs = input.from === undefined ? undefined : parseTimestamp(input.from)
  const toUs = input.to === undefined ? undefined : parseTimestamp(input.to)
  if (fromUs === null) throw problems.field('/from', 'format', 'from must be an RFC 3339 timestamp')
  if (toUs === null) throw problems.field('/to', 'format', 'to must be an RFC 3339 timestamp')
  const filter = { actorKind: input.actor_kind, actorId: input.actor_id, operation: input.operation, outcome: input.outcome, fromUs, toUs }
  const scope = `audit:${actor.tenantId}:${JSON.stringify(filter)}`
  const beforeId = input.cursor ? decodeCursor<{ id: string }>(deps.keys.cursor, scope, input.cursor).id : undefined
  const rows = listAudit(deps.db, actor.tenantId, { ...filter, beforeId }, limit + 1)
  return toPage(rows, limit, (r) => ({ id: r.id }), { key: deps.keys.cursor, scope }, auditView)
}

export function auditView(r: AuditRow) {
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

/** An event of a member outside an authenticated request (sign-in, signup, password reset). */
export function recordMemberEvent(
  tx: DbOrTx,
  deps: Pick<Deps, 'newId' | 'clock'>,
  who: { tenantId: string; userId: string; ip: string | null; userAgent: string | null },
  operation: string,
  outcome: AuditRow['outcome'] = 'succeeded',
): void {
  insertAudit(tx, {
    id: deps.newId(),
    tenantId: who.tenantId,
    actorKind: 'user',
    actorId: who.userId,
    operation,
    targetKind: 'user',
    targetId: who.userId,
    ip: who.ip,
    userAgent: who.userAgent?.slice(0, 256) ?? null,
    outcome,
    status: null,
    requestId: null,
    detail: null,
    createdAt: deps.clock.nowUs(),
  })
}

/** A change the service made on its own (a job): actor kind system. */
export function recordSystemEvent(tx: DbOrTx, deps: Pick<Deps, 'newId' | 'clock'>, tenantId: string, operation: string, detail?: string): void {
  insertAudit(tx, {
    id: deps.newId(),
    tenantId,
    actorKind: 'system',
    actorId: null,
    operation,
    targetKind: 'tenant',
    targetId: tenantId,
    detail: detail?.slice(0, 512) ?? null,
    ip: null,
    userAgent: null,
    outcome: 'succeeded',
    status: null,
    requestId: null,
    createdAt: deps.clock.nowUs(),
  })
}
