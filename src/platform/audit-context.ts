import { actorOf, type Actor } from './actor'
import { requestState } from './http'

/**
 * What an audit row needs to know about the request that caused it. The audit module writes the
 * rows (src/modules/audit); the request's side of them is the platform's, so every routes file gets
 * it from its verb context (src/platform/api.ts) without importing that module.
 */
export type AuditContext = {
  actor: Actor
  ip: string | null
  userAgent: string | null
  requestId: string | null
  /** Tells the request wrapper the operation recorded itself (no fallback row needed). */
  markRecorded: () => void
}

export function auditContextOf(request: Request): AuditContext {
  const state = requestState(request)
  return {
    actor: actorOf(request),
    ip: state.ip,
    userAgent: request.headers.get('user-agent')?.slice(0, 256) ?? null,
    requestId: state.id,
    markRecorded: () => {
      state.audited = true
    },
  }
}

/**
 * gpuhq acting for a tenant on its own (a job, the sync, a drain, a bulk run, the watchdog): the
 * operations log and the audit trail show `system`; nothing of a request to record.
 */
export function systemActor(tenantId: string): Actor {
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

/** The system actor of a tenant and its audit context (no request: no address, agent or id). */
export function systemContext(tenantId: string): { actor: Actor; audit: AuditContext } {
  const actor = systemActor(tenantId)
  return { actor, audit: { actor, ip: null, userAgent: null, requestId: null, markRecorded: () => {} } }
}
