import type { Deps } from './context'
import { requestState } from './http'
import { ProblemError } from './problem'
import { enforceRequestRateLimits } from './rate-limit'

/**
 * One permission model. Every route declares an AccessSpec next to itself (it also lands in the
 * OpenAPI document as `x-gpuhq-access`); `authorize` combines it with the caller (session user,
 * PAT, agent, AI-assistant token, system job), the member role, the token's scopes and server
 * allowlist, the plan's entitlements and the account state. It runs once per request before the
 * body is validated, so an anonymous caller gets 401 and an unpermitted one 403 whatever they sent.
 *
 * Outcomes, in this order: 401 unauthorized → 403 forbidden (role, scope, cookie-only) →
 * 409 plan_required → 403 feature_not_entitled → 403 account_frozen / account_in_grace →
 * 404 not_found (a server outside the token's allowlist, like any foreign id).
 */

export const ROLES = ['viewer', 'operator', 'admin', 'owner'] as const
export type Role = (typeof ROLES)[number]

export const SCOPE_AREAS = ['servers', 'commands', 'billing', 'marketplaces', 'notifications', 'strategy', 'audit'] as const
export type Scope = `${(typeof SCOPE_AREAS)[number]}:${'read' | 'write'}`
export const ALL_SCOPES: Scope[] = SCOPE_AREAS.flatMap((a) => [`${a}:read`, `${a}:write`] as Scope[])

/** The most each role can do; a token's scopes are always cut down to its creator's current role. */
export const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  viewer: ALL_SCOPES.filter((s) => s.endsWith(':read') && s !== 'audit:read'),
  operator: [...ALL_SCOPES.filter((s) => s.endsWith(':read') && s !== 'audit:read'), 'servers:write', 'commands:write'],
  admin: ALL_SCOPES,
  owner: ALL_SCOPES,
}

export const ENTITLEMENTS = ['strategy', 'ai_access'] as const
export type Entitlement = (typeof ENTITLEMENTS)[number]

export function roleAtLeast(role: Role, minimum: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(minimum)
}

export type AccessSpec =
  | {
      /** The enrolled agent of a server, with its gpuhq_agt_ credential (nothing else). */
      agent: true
    }
  | {
      public: true
      /** A deployment switch that must be on, else the operation answers 404 (signup). */
      requires?: 'signup'
    }
  | {
      /** Lowest member role allowed. */
      role: Role
      /**
       * Scope a bearer token needs. Every declaration names one, or says `cookieOnly`, or says
       * `anyToken`: a route that does none of these does not start (access fails closed).
       */
      scope?: Scope
      /** Browser session only (no bearer tokens), e.g. minting tokens. */
      cookieOnly?: boolean
      /** Any valid token may call it, whatever its scopes: only for reads of the caller itself (GET /me). */
      anyToken?: boolean
      /** Plan feature needed (403 feature_not_entitled otherwise). */
      entitlement?: Entitlement
      /** Refused while the account is frozen (403 account_frozen). */
      denyFrozen?: boolean
      /** Refused while the account is in grace (403 account_in_grace). */
      denyGrace?: boolean
      /** The tenant must have a plan assignment (409 plan_required). */
      requiresPlan?: boolean
      /**
       * Path parameter naming a server under another name than `server_id` (e.g. `id` in
       * /servers/:id): outside a token's allowlist it answers 404. `server_id` and `server_ids`
       * are checked wherever they arrive (path, query, body) without being declared.
       */
      serverParam?: string
    }

export type TenantContext = { planCode: string | null; accountState: 'active' | 'grace' | 'frozen' }

export type Actor = {
  kind: 'user' | 'pat' | 'agent' | 'mcp' | 'system'
  via: 'cookie' | 'bearer' | 'system'
  tenantId: string
  /** The member behind the call (the token's creator for a PAT); null for agents and the system. */
  userId: string | null
  role: Role | null
  sessionId?: string
  tokenId?: string
  /** Scopes of a token; null means the member role alone decides (browser session, system). */
  scopes: readonly Scope[] | null
  /** Servers a token is limited to; null means no caveat. */
  serverAllowlist: readonly string[] | null
  tenant: TenantContext
}

export const SESSION_COOKIE = '__Host-gpuhq_session'

export type Authenticators = {
  /** Resolves a session cookie's value to its actor, or null when unknown or expired. */
  session: (token: string) => Actor | null
  /** Resolves an Authorization: Bearer token, or null. */
  bearer: (token: string) => Actor | null
  /** The features of a plan code ([] when unknown). */
  planFeatures: (planCode: string) => readonly string[]
}

const actors = new WeakMap<Request, Actor>()
const checked = new WeakSet<Request>()

export function actorOf(request: Request): Actor {
  const actor = actors.get(request)
  if (!actor) throw new Error('actorOf() called on a route without authentication')
  return actor
}

/** The OpenAPI `detail` of a route, carrying its access declaration. */
export function describe<D extends { tags: string[]; summary: string; description?: string }>(spec: AccessSpec, doc: D) {
  let who: string
  let security: Record<string, string[]>[] = []
  if ('public' in spec) who = 'Public: no credentials.'
  else if ('agent' in spec) {
    who = 'Requires the agent credential of an enrolled server (Authorization: Bearer gpuhq_agt_…).'
    security = [{ bearer: [] }]
  } else {
    const parts = [
      spec.cookieOnly ? 'a browser session cookie' : `a session cookie or a bearer token${spec.scope ? ` with scope \`${spec.scope}\`` : ''}`,
      `role ${spec.role} or above`,
    ]
    if (spec.entitlement) parts.push(`plan feature \`${spec.entitlement}\``)
    if (spec.requiresPlan) parts.push('a plan assignment')
    if (spec.denyFrozen) parts.push('an account that is not frozen')
    if (spec.denyGrace) parts.push('an account that is not in grace')
    who = `Requires ${parts.join(', ')}.`
    security = spec.cookieOnly ? [{ session: [] }] : [{ session: [] }, { bearer: spec.scope ? [spec.scope] : [] }]
  }
  return { ...doc, description: doc.description ? `${doc.description}\n\n${who}` : who, security, 'x-gpuhq-access': spec }
}

/**
 * Access declarations by "METHOD /route/template", read from the registered routes. Access fails
 * closed: a route without a declaration, a declaration that names neither a scope, `cookieOnly` nor
 * `anyToken`, or a /servers/:id route that does not declare its server parameter stops the app
 * from starting. `undeclaredPublic` names the few routes a plugin registers (the API docs).
 */
export function buildAccessIndex(
  routes: { method: string; path: string; hooks?: { detail?: Record<string, unknown> } }[],
  undeclaredPublic: readonly string[] = [],
) {
  const index = new Map<string, AccessSpec>()
  const problems: string[] = []
  for (const r of routes) {
    if (r.method === 'WS') continue
    const key = `${r.method} ${r.path}`
    const spec = r.hooks?.detail?.['x-gpuhq-access'] as AccessSpec | undefined
    if (!spec) {
      if (undeclaredPublic.includes(key)) index.set(key, { public: true })
      else problems.push(`${key} has no access declaration (describe(spec, doc) in its detail)`)
      continue
    }
    if (!('public' in spec) && !('agent' in spec)) {
      if (!spec.scope && !spec.cookieOnly && !spec.anyToken) problems.push(`${key} names no scope, cookieOnly or anyToken`)
      const m = /\/servers\/:([A-Za-z_]+)/.exec(r.path)
      if (m && m[1] !== 'server_id' && spec.serverParam !== m[1]) problems.push(`${key} must declare serverParam: '${m[1]}'`)
    }
    index.set(key, spec)
  }
  if (problems.length) throw new Error(`access declarations are incomplete:\n  ${problems.join('\n  ')}`)
  return index
}

/** Methods that never change state: no CSRF check, and a token without a scope may use them. */
export const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

function cookieValue(header: string | null, name: string): string | null {
  if (!header) return null
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return null
}

function unauthorized(): ProblemError {
  return new ProblemError('unauthorized', { detail: 'missing or invalid credentials', headers: { 'WWW-Authenticate': 'Bearer realm="gpuhq"' } })
}

/**
 * The authorisation decision for an identified actor; throws the problem that applies. Used by
 * every HTTP route (through ensureAccess) and by anything else that acts for a caller.
 */
export function authorize(
  actor: Actor,
  spec: Exclude<AccessSpec, { public: true } | { agent: true }>,
  ctx: {
    method: string
    params?: Record<string, string | undefined>
    planFeatures: (code: string) => readonly string[]
  },
): void {
  if (actor.kind === 'system') return
  if (actor.kind === 'agent') throw new ProblemError('forbidden', { detail: 'agent credentials only serve the agent operations' })
  if (spec.cookieOnly && actor.via !== 'cookie') throw new ProblemError('forbidden', { detail: 'this operation needs a browser session, not a token' })
  if (!actor.role || !roleAtLeast(actor.role, spec.role)) throw new ProblemError('forbidden', { detail: `this operation needs the ${spec.role} role or above` })
  if (actor.scopes !== null) {
    // Fails closed: a token passes only a scope it holds, or a declaration that names every token.
    if (spec.scope) {
      if (!actor.scopes.includes(spec.scope) || !ROLE_SCOPES[actor.role].includes(spec.scope))
        throw new ProblemError('forbidden', { detail: `the token lacks the ${spec.scope} scope` })
    } else if (!(spec.anyToken && SAFE_METHODS.has(ctx.method))) {
      throw new ProblemError('forbidden', { detail: 'tokens cannot perform this operation' })
    }
    if (actor.serverAllowlist && spec.scope && TENANT_WIDE_AREAS.has(spec.scope.split(':')[0]!))
      throw new ProblemError('forbidden', {
        detail: `a token limited to servers (server_allowlist) cannot use ${spec.scope}: it spans every server of the tenant`,
      })
  }
  if (spec.requiresPlan && actor.tenant.planCode === null) throw new ProblemError('plan_required', { detail: 'the tenant has no plan assignment' })
  if (spec.entitlement && !(actor.tenant.planCode && ctx.planFeatures(actor.tenant.planCode).includes(spec.entitlement)))
    throw new ProblemError('feature_not_entitled', { detail: `the plan does not include ${spec.entitlement}` })
  if (spec.denyFrozen && actor.tenant.accountState === 'frozen')
    throw new ProblemError('account_frozen', { detail: 'the account is frozen; a top-up that brings the balance above zero unfreezes it' })
  if (spec.denyGrace && actor.tenant.accountState === 'grace')
    throw new ProblemError('account_in_grace', { detail: 'the account is in grace; top up to continue' })
  if (actor.serverAllowlist) {
    const named = spec.serverParam ? ctx.params?.[spec.serverParam] : undefined
    if (named !== undefined) ensureServerAllowed(actor, named)
    for (const [name, value] of Object.entries(ctx.params ?? {})) if (SERVER_ID_NAMES.has(name) && value !== undefined) ensureServerAllowed(actor, value)
  }
}

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

function ensureServerAllowed(actor: Actor, id: unknown): void {
  if (typeof id === 'string' && actor.serverAllowlist && !actor.serverAllowlist.includes(id.trim().toLowerCase()))
    throw new ProblemError('not_found', { detail: 'resource not found' })
}

/** Stands in for a server id outside the allowlist in a query filter: no server has it. */
export const NO_SERVER_ID = '00000000-0000-0000-0000-000000000000'

/**
 * The query half of the allowlist check, run before validation: a server id outside the token's
 * allowlist in a query filter is replaced by an id no server has, so the operation answers exactly
 * as for an id that does not exist (an empty list, or 404) and can show nothing of that server even
 * if it forgot to filter. A 404 here would tell the token which ids are its tenant's servers.
 */
export function narrowQueryServers(request: Request, query: Record<string, unknown> | undefined): void {
  const allow = actors.get(request)?.serverAllowlist
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
  const actor = actors.get(request)
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
        if (Array.isArray(inner)) inner.forEach((id) => ensureServerAllowed(actor, id))
        else ensureServerAllowed(actor, inner)
      }
      if (inner !== null && typeof inner === 'object') stack.push(inner)
    }
  }
}

/** True when the actor may see this server at all (allowlist caveat); lists filter with it. */
export function mayAccessServer(actor: Actor, serverId: string): boolean {
  return actor.serverAllowlist === null || actor.serverAllowlist.includes(serverId.toLowerCase())
}

/**
 * Runs once per request (from the parse or transform hook, whichever comes first): identifies the
 * caller and applies the route's declaration.
 */
export function ensureAccess(
  deps: Deps,
  index: Map<string, AccessSpec>,
  authenticators: Authenticators,
  request: Request,
  route: string,
  params: Record<string, string | undefined> | undefined,
): void {
  if (checked.has(request)) return
  checked.add(request)
  const spec = index.get(`${request.method} ${route}`) ?? (request.method === 'HEAD' ? index.get(`GET ${route}`) : undefined)
  // Unreachable for routes built by createApp (buildAccessIndex refuses them); closed all the same.
  if (!spec) throw new ProblemError('forbidden', { detail: 'this operation has no access declaration' })
  if ('public' in spec) {
    if (spec.requires === 'signup' && !deps.config.signupEnabled) throw new ProblemError('not_found', { detail: 'signup is disabled on this deployment' })
    return
  }

  const authorization = request.headers.get('authorization')
  const cookie = cookieValue(request.headers.get('cookie'), SESSION_COOKIE)
  let actor: Actor | null = null
  if (authorization !== null) {
    const m = /^Bearer ([\x21-\x7e]{1,512})$/i.exec(authorization.trim())
    actor = m ? authenticators.bearer(m[1]!) : null
  } else if (cookie) {
    actor = authenticators.session(cookie)
  }
  if (!actor) throw unauthorized()
  requestState(request, deps).tenantId = actor.tenantId
  if ('agent' in spec) {
    if (actor.kind !== 'agent') throw new ProblemError('forbidden', { detail: 'this operation is for agents' })
    actors.set(request, actor)
    requestState(request, deps).actor = { kind: 'agent', id: actor.tokenId ?? null }
    return
  }

  if (actor.via === 'cookie' && !SAFE_METHODS.has(request.method)) {
    const site = request.headers.get('sec-fetch-site')
    const origin = request.headers.get('origin')
    if (site === 'cross-site' || (origin !== null && origin !== deps.config.publicUrl))
      throw new ProblemError('csrf_rejected', { detail: 'cross-site request refused' })
  }
  const state = requestState(request, deps)
  state.actor = { kind: actor.kind, id: actor.kind === 'user' ? actor.userId : (actor.tokenId ?? null) }
  authorize(actor, spec, { method: request.method, params, planFeatures: authenticators.planFeatures })
  enforceRequestRateLimits(deps, actor, request.method)
  actors.set(request, actor)
}
