import { actorIfAny, type Actor } from './actor'
import { ProblemError } from './problem'

/**
 * A token's server_allowlist, wherever a server id arrives (docs/access.md "Server allowlists"):
 * path parameters are checked by access.ts with ensureServerAllowed; query filters and JSON bodies
 * here, from the platform's transform and parse hooks.
 */

/**
 * Field and parameter names that carry server ids. Wherever one arrives, an id outside the token's
 * allowlist is treated like an id that does not exist: in the path or at any depth of a JSON body it
 * answers 404; in a query filter it matches nothing (narrowQueryServers).
 */
export const SERVER_ID_NAMES: ReadonlySet<string> = new Set(['server_id', 'server_ids'])

/**
 * Scope areas whose data spans every server of the tenant (money, the audit trail): a token with a
 * server_allowlist is refused them (403), since no answer could be cut down to its servers.
 */
export const TENANT_WIDE_AREAS: ReadonlySet<string> = new Set(['billing', 'audit'])

export function ensureServerAllowed(actor: Actor, id: unknown): void {
  if (typeof id === 'string' && actor.serverAllowlist && !actor.serverAllowlist.includes(id.trim().toLowerCase()))
    throw new ProblemError('not_found', { detail: 'resource not found' })
}

/** Stands in for a server id outside the allowlist in a query filter: no server has it. */
const NO_SERVER_ID = '00000000-0000-0000-0000-000000000000'

/**
 * The query half of the allowlist check, run before validation: a server id outside the token's
 * allowlist in a query filter is replaced by an id no server has, so the operation answers exactly
 * as for an id that does not exist (an empty list, or 404) and can show nothing of that server even
 * if it forgot to filter. A 404 here would tell the token which ids are its tenant's servers.
 */
export function narrowQueryServers(request: Request, query: Record<string, unknown> | undefined): void {
  const allow = actorIfAny(request)?.serverAllowlist
  if (!allow || !query) return
  const allowed = (id: string) => allow.includes(id.trim().toLowerCase())
  const narrow = (value: string) => {
    const ids = value.split(',').filter(allowed)
    return ids.length ? ids.join(',') : NO_SERVER_ID
  }
  for (const name of SERVER_ID_NAMES) {
    const value = query[name]
    if (typeof value === 'string') query[name] = narrow(value)
    else if (Array.isArray(value)) query[name] = value.map((v) => (typeof v === 'string' ? narrow(v) : v))
  }
}

/**
 * The body half of the allowlist check, run by the platform parser right after the JSON is parsed
 * (before validation, so a malformed body still cannot name a server it may not reach).
 */
export function ensureBodyServers(request: Request, body: unknown): void {
  const actor = actorIfAny(request)
  if (!actor?.serverAllowlist || body === null || typeof body !== 'object') return
  // Iterative: bodies are depth-limited already, but this walk must not depend on it.
  const stack: unknown[] = [body]
  while (stack.length) {
    const value = stack.pop()
    if (value === null || typeof value !== 'object') continue
    if (Array.isArray(value)) {
      stack.push(...value)
      continue
    }
    for (const [key, inner] of Object.entries(value)) {
      if (SERVER_ID_NAMES.has(key)) {
        if (Array.isArray(inner)) for (const id of inner) ensureServerAllowed(actor, id)
        else ensureServerAllowed(actor, inner)
      }
      if (inner !== null && typeof inner === 'object') stack.push(inner)
    }
  }
}
