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
 * What an operation reaches, as every role-based access declaration states it (`reach` in
 * `describe({ role, scope, reach }, doc)`; docs/access.md "What an operation reaches"). It decides
 * what a token with a server_allowlist may do there:
 *
 * - `server`: per server. The operation names its servers (a path parameter, or `server_id` /
 *   `server_ids` in the query or anywhere in a JSON body: all checked here and in access.ts) or
 *   answers only the token's servers (the service filters with `mayAccessServer`). Allowed.
 * - `tenant`: the tenant as a whole (marketplace accounts, settings and channels, money, members,
 *   groups, tokens, the fleet-wide logs). Refused, read or write: 403 forbidden with
 *   `errors[0].code` `tenant_wide`. A change there would act on servers outside the allowlist, and
 *   a read would show them.
 * - `none`: nothing of any server nor of the tenant as a whole (GET /me, the command catalogue,
 *   public market movement). Allowed as it is. A write declared `none` must be cookie-only, so no
 *   token write escapes the choice between `server` and `tenant`.
 */
export const REACHES = ['server', 'tenant', 'none'] as const
export type Reach = (typeof REACHES)[number]

/** The `errors[0].code` of a 403 for a token with a server_allowlist (docs/access.md). */
const ALLOWLIST_CODES = {
  /** The operation (or the thing it acts on) spans the whole tenant. */
  tenantWide: 'tenant_wide',
  /** The request reaches servers outside the allowlist through something other than their ids (a group, a GPU model). */
  outsideAllowlist: 'outside_allowlist',
} as const

/**
 * Scope areas whose data spans every server of the tenant (money, the audit trail): every operation
 * of theirs is `reach: 'tenant'` (buildAccessIndex checks it), and for an `anyScope` answer a token
 * with a server_allowlist cannot use them (its part is left out).
 */
export const TENANT_WIDE_AREAS: ReadonlySet<string> = new Set(['billing', 'audit'])

/** 403 for a token with a server_allowlist on something of the whole tenant. */
export function tenantWideRefusal(what: string, path = ''): ProblemError {
  return new ProblemError('forbidden', {
    detail: `a token limited to servers (server_allowlist) cannot use ${what}: it spans every server of the tenant`,
    errors: [{ path, code: ALLOWLIST_CODES.tenantWide }],
  })
}

/**
 * For a service whose request reaches servers through something other than their ids, decided by
 * data (a pricing policy's group or GPU model target, an incident of the whole account): 403 unless
 * the actor may reach every one of `serverIds`; null means the tenant as a whole. `path` points at
 * what reaches too far (a JSON Pointer into the body, or "" for the resource itself). Callers
 * without an allowlist pass.
 */
export function ensureReaches(actor: Actor, serverIds: readonly string[] | null, what: string, path = ''): void {
  const allow = actor.serverAllowlist
  if (!allow) return
  if (serverIds === null) throw tenantWideRefusal(what, path)
  const outside = serverIds.filter((id) => !allow.includes(id.toLowerCase()))
  if (outside.length)
    throw new ProblemError('forbidden', {
      detail: `a token limited to servers (server_allowlist) cannot use ${what}: it reaches servers outside its allowlist`,
      errors: [{ path, code: ALLOWLIST_CODES.outsideAllowlist }],
    })
}

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
