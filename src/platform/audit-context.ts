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
