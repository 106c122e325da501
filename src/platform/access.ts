import type { Deps } from './context'
import { requestState } from './http'
import { ProblemError, problems } from './problem'
import { enforceRequestRateLimits, keepRode, riderOf, takeRequestRateLimits } from './rate-limit'
import { ROLE_SCOPES, SAFE_METHODS, roleAtLeast, setActor, type Actor, type Entitlement, type Role, type Scope } from './actor'
import { ensureServerAllowed, REACHES, SERVER_ID_NAMES, TENANT_WIDE_AREAS, tenantWideRefusal, type Reach } from './allowlist'

// The access check's companions, imported by routes and services from here.
export * from './actor'
export { ensureBodyServers, ensureReaches, narrowQueryServers } from './allowlist'

/**
 * One permission model. Every route declares an AccessSpec next to itself (it also lands in the
 * OpenAPI document as `x-gpuhq-access`); `authorize` combines it with the caller (session user,
 * PAT, agent, AI-assistant token, system job), the member role, the token's scopes and server
 * allowlist, the plan's entitlements and the account state. It runs once per request before the
 * body is validated, so an anonymous caller gets 401 and an unpermitted one 403 whatever they sent.
 *
 * Outcomes, in this order: 401 unauthorized → 403 forbidden (role, scope, cookie-only, a
 * tenant-wide operation for a token with a server allowlist) → 409 plan_required → 403
 * feature_not_entitled → 403 account_frozen / account_in_grace → 404 not_found (a server outside
 * the token's allowlist, like any foreign id).
 */

export type AccessSpec =
  | {
      /** The enrolled agent of a server, with its gpuhq_agt_ credential (nothing else). */
      agent: true
    }
  | {
      /**
       * The AI-assistant gateway and its whoami: only an AI-assistant token (the tenant's gpuhq_mcp_
       * token or an OAuth access token issued for this resource). Unauthenticated → 401 with the
       * protected-resource metadata in WWW-Authenticate (RFC 9728).
       */
      mcp: true
      /** Plan feature needed (403 feature_not_entitled otherwise). */
      entitlement?: Entitlement
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
       * What the operation reaches: `server` (its servers are named in the request or its answer is
       * cut to the caller's), `tenant` (the tenant as a whole: refused to a token with a server
       * allowlist, 403 tenant_wide) or `none` (nothing of any server nor of the tenant). Every
       * declaration states it (allowlist.ts, docs/access.md "What an operation reaches").
       */
      reach: Reach
      /**
       * Scope a bearer token needs. Every declaration names one, or `anyScope`, or says `cookieOnly`,
       * or says `anyToken`: a route that does none of these does not start (access fails closed).
       */
      scope?: Scope
      /**
       * A bearer token needs at least one of these scopes (usable by its creator's current role, and
       * not a tenant-wide area for a token with a server allowlist): for an answer made of parts of
       * several areas, each part shown only to a caller that `permits` it (the live event stream).
       */
      anyScope?: readonly Scope[]
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

export const SESSION_COOKIE = '__Host-gpuhq_session'

export type Authenticators = {
  /** Resolves a session cookie's value to its actor, or null when unknown or expired. */
  session: (token: string) => Promise<Actor | null>
  /** Resolves an Authorization: Bearer token, or null. */
  bearer: (token: string) => Promise<Actor | null>
  /** Resolves an AI-assistant token (only for `mcp` routes; `request` lets the resolver keep what it learned for the handler). */
  mcp: (token: string, request: Request) => Promise<Actor | null>
  /** The features of a plan code ([] when unknown). */
  planFeatures: (planCode: string) => Promise<readonly string[]>
  /**
   * PostgreSQL: a verification of this bearer token kept in memory from an earlier request, with
   * the credentials' change counter it was made under, without reading anything; null when none is
   * kept (or it is due a write). checkAccess uses it only once the counter, read by the rate
   * limit's statement, confirms it; else it resolves the credential afresh.
   */
  bearerKept?: (token: string) => { actor: Actor; epoch: number } | null
  /** The same for a session cookie's value. */
  sessionKept?: (token: string) => { actor: Actor; epoch: number } | null
}

/** The features of the caller's plan, read only when the route is entitled by one. */
async function featuresFor(authenticators: Authenticators, spec: AccessSpec, actor: Actor): Promise<(code: string) => readonly string[]> {
  const entitled = 'entitlement' in spec && spec.entitlement !== undefined && actor.tenant.planCode
  const features = entitled ? await authenticators.planFeatures(actor.tenant.planCode!) : []
  return () => features
}

const checked = new WeakMap<Request, Promise<void>>()
const presetActors = new WeakMap<Request, Actor>()

/**
 * Marks an in-process request as made on `actor`'s behalf (the AI-assistant gateway turns each tool
 * call into the REST operation it stands for). It then passes the very same access check, body and
 * allowlist rules as any HTTP request, as that actor. A Request that arrived over the network is
 * never in this map, so no header can claim it.
 */
export function onBehalfOf(request: Request, actor: Actor): Request {
  presetActors.set(request, actor)
  return request
}

/** How the OpenAPI description states a route's reach (docs/access.md "What an operation reaches"). */
const REACH_SENTENCE: Record<Reach, string> = {
  server: 'Per server: a token with a server_allowlist reaches only its servers (others answer 404 or are left out).',
  tenant: 'Tenant-wide: a token with a server_allowlist is refused (403 forbidden, errors[0].code tenant_wide).',
  none: 'Reaches no server: a token with a server_allowlist is served as any other.',
}

/** The OpenAPI `detail` of a route, carrying its access declaration. */
export function describe<D extends { tags: string[]; summary: string; description?: string }>(spec: AccessSpec, doc: D) {
  let who: string
  let security: Record<string, string[]>[] = []
  if ('public' in spec) who = 'Public: no credentials.'
  else if ('mcp' in spec) {
    who = 'Requires an AI-assistant token (Authorization: Bearer gpuhq_mcp_… or an OAuth access token from POST /api/v1/mcp/token).'
    security = [{ bearer: [] }]
  } else if ('agent' in spec) {
    who = 'Requires the agent credential of an enrolled server (Authorization: Bearer gpuhq_agt_…).'
    security = [{ bearer: [] }]
  } else {
    const scopes = spec.scope
      ? ` with scope \`${spec.scope}\``
      : spec.anyScope
        ? ` with at least one of the scopes ${spec.anyScope.map((x) => `\`${x}\``).join(', ')}`
        : ''
    const parts = [spec.cookieOnly ? 'a browser session cookie' : `a session cookie or a bearer token${scopes}`, `role ${spec.role} or above`]
    if (spec.entitlement) parts.push(`plan feature \`${spec.entitlement}\``)
    if (spec.requiresPlan) parts.push('a plan assignment')
    if (spec.denyFrozen) parts.push('an account that is not frozen')
    if (spec.denyGrace) parts.push('an account that is not in grace')
    who = `Requires ${parts.join(', ')}. ${REACH_SENTENCE[spec.reach]}`
    security = spec.cookieOnly
      ? [{ session: [] }]
      : spec.anyScope
        ? [{ session: [] }, ...spec.anyScope.map((x) => ({ bearer: [x] }))]
        : [{ session: [] }, { bearer: spec.scope ? [spec.scope] : [] }]
  }
  return { ...doc, description: doc.description ? `${doc.description}\n\n${who}` : who, security, 'x-gpuhq-access': spec }
}

/**
 * Access declarations by "METHOD /route/template", read from the registered routes. Access fails
 * closed: a route without a declaration, a declaration that names neither a scope, `cookieOnly` nor
 * `anyToken`, one that does not say what it reaches (`reach`; `tenant` for the billing and audit
 * areas; `none` on a write only when cookie-only), or a /servers/:id route that does not declare
 * its server parameter stops the app from starting. `undeclaredPublic` names the few routes a
 * plugin registers (the API docs).
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
    if (!('public' in spec) && !('agent' in spec) && !('mcp' in spec)) {
      if (!spec.scope && !spec.anyScope?.length && !spec.cookieOnly && !spec.anyToken) problems.push(`${key} names no scope, cookieOnly or anyToken`)
      if (!REACHES.includes(spec.reach)) problems.push(`${key} must say what it reaches: reach 'server', 'tenant' or 'none'`)
      else if (spec.scope && TENANT_WIDE_AREAS.has(spec.scope.split(':')[0]!) && spec.reach !== 'tenant')
        problems.push(`${key} uses ${spec.scope}, an area that spans the tenant: reach must be 'tenant'`)
      else if (spec.reach === 'none' && !SAFE_METHODS.has(r.method) && !spec.cookieOnly)
        problems.push(`${key} is a write a token can make: reach must be 'server' or 'tenant', not 'none'`)
      const m = /\/servers\/:([A-Za-z_]+)/.exec(r.path)
      if (m && m[1] !== 'server_id' && spec.serverParam !== m[1]) problems.push(`${key} must declare serverParam: '${m[1]}'`)
    }
    index.set(key, spec)
  }
  if (problems.length) throw new Error(`access declarations are incomplete:\n  ${problems.join('\n  ')}`)
  return index
}

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

/** The token of an `Authorization: Bearer …` header, or null for any other shape. */
function bearerToken(authorization: string | null): string | null {
  const m = authorization === null ? null : /^Bearer ([\x21-\x7e]{1,512})$/i.exec(authorization.trim())
  return m ? m[1]! : null
}

/** 403 feature_not_entitled unless the tenant's plan has the feature (when the route needs one). */
function ensureEntitled(actor: Actor, entitlement: Entitlement | undefined, planFeatures: (code: string) => readonly string[]): void {
  if (entitlement && !(actor.tenant.planCode && planFeatures(actor.tenant.planCode).includes(entitlement)))
    throw new ProblemError('feature_not_entitled', { detail: `the plan does not include ${entitlement}` })
}

/** Where an AI-assistant client learns how to get a token (RFC 9728 §5.1; MCP authorization). */
const protectedResourceMetadataUrl = (publicUrl: string) => `${publicUrl}/.well-known/oauth-protected-resource/mcp`

function mcpUnauthorized(publicUrl: string, presented: boolean): ProblemError {
  const params = [...(presented ? ['error="invalid_token"'] : []), 'scope="mcp"', `resource_metadata="${protectedResourceMetadataUrl(publicUrl)}"`]
  return new ProblemError('unauthorized', {
    detail: presented ? 'the AI-assistant token is unknown, revoked, expired, or not issued for this resource' : 'an AI-assistant token is required',
    headers: { 'WWW-Authenticate': `Bearer ${params.join(', ')}` },
  })
}

/**
 * The authorisation decision for an identified actor; throws the problem that applies. Every HTTP
 * route reaches it through ensureAccess; a caller outside HTTP (AI-assistant tools) will share it.
 */
function authorize(
  actor: Actor,
  spec: Exclude<AccessSpec, { public: true } | { agent: true } | { mcp: true }>,
  ctx: {
    method: string
    /** The route template, for the detail of a refusal. */
    route: string
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
    } else if (spec.anyScope?.length) {
      const role = actor.role
      const usable = spec.anyScope.filter(
        (x) => actor.scopes!.includes(x) && ROLE_SCOPES[role].includes(x) && !(actor.serverAllowlist && TENANT_WIDE_AREAS.has(x.split(':')[0]!)),
      )
      if (!usable.length) throw new ProblemError('forbidden', { detail: `the token holds none of the scopes ${spec.anyScope.join(', ')}` })
    } else if (!(spec.anyToken && SAFE_METHODS.has(ctx.method))) {
      throw new ProblemError('forbidden', { detail: 'tokens cannot perform this operation' })
    }
    if (actor.serverAllowlist && spec.reach === 'tenant') throw tenantWideRefusal(`${ctx.method} ${ctx.route}`)
    // buildAccessIndex makes every billing and audit route tenant-wide; checked again for declarations made by hand (permits).
    if (actor.serverAllowlist && spec.scope && TENANT_WIDE_AREAS.has(spec.scope.split(':')[0]!)) throw tenantWideRefusal(spec.scope)
  }
  if (spec.requiresPlan && actor.tenant.planCode === null) throw new ProblemError('plan_required', { detail: 'the tenant has no plan assignment' })
  ensureEntitled(actor, spec.entitlement, ctx.planFeatures)
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
 * Whether `actor` may read something of `scope` about `serverId` (null: about no server): exactly the
 * check a GET route declaring that scope makes (role, the token's scopes cut to its creator's role,
 * tenant-wide areas refused to an allowlisted token, the server allowlist). For answers assembled
 * from several areas (the live event stream), so that no part needs a check of its own.
 */
export function permits(actor: Actor, scope: Scope, serverId: string | null): boolean {
  try {
    authorize(
      actor,
      { role: 'viewer', scope, reach: 'server' },
      { method: 'GET', route: scope, params: serverId === null ? {} : { server_id: serverId }, planFeatures: () => [] },
    )
    return true
  } catch (e) {
    if (e instanceof ProblemError) return false
    throw e
  }
}

const rechecks = new WeakMap<Request, () => Promise<Actor | null>>()

/**
 * The request's caller as of now, for an answer that outlives its request (the live event stream):
 * its credential is resolved again (a revoked or expired token, an ended session, a removed member
 * answer null) and the route's declaration applied again to the fresh actor (a lowered role, say).
 * Null when the request would no longer be let in.
 */
export async function reauthenticate(request: Request): Promise<Actor | null> {
  const recheck = rechecks.get(request)
  return recheck ? await recheck() : null
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
): Promise<void> {
  // Both hooks may call it: the second gets the first's check (and its failure).
  let done = checked.get(request)
  if (!done) checked.set(request, (done = checkAccess(deps, index, authenticators, request, route, params)))
  return done
}

async function checkAccess(
  deps: Deps,
  index: Map<string, AccessSpec>,
  authenticators: Authenticators,
  request: Request,
  route: string,
  params: Record<string, string | undefined> | undefined,
): Promise<void> {
  const spec = index.get(`${request.method} ${route}`) ?? (request.method === 'HEAD' ? index.get(`GET ${route}`) : undefined)
  // Unreachable for routes built by createApp (buildAccessIndex refuses them); closed all the same.
  if (!spec) throw new ProblemError('forbidden', { detail: 'this operation has no access declaration' })
  if ('public' in spec) {
    if (spec.requires === 'signup' && !deps.config.signupEnabled) throw new ProblemError('not_found', { detail: 'signup is disabled on this deployment' })
    return
  }

  const authorization = request.headers.get('authorization')
  if ('mcp' in spec) {
    const token = bearerToken(authorization)
    const found = token ? await authenticators.mcp(token, request) : null
    if (!found) throw mcpUnauthorized(deps.config.publicUrl, authorization !== null)
    requestState(request, deps).tenantId = found.tenantId
    requestState(request, deps).actor = { kind: 'mcp', id: found.tokenId ?? null }
    ensureEntitled(found, spec.entitlement, await featuresFor(authenticators, spec, found))
    await enforceRequestRateLimits(deps, found, request.method)
    setActor(request, found)
    return
  }
  const cookie = cookieValue(request.headers.get('cookie'), SESSION_COOKIE)
  const preset = presetActors.get(request) ?? null
  // On behalf of an actor already identified (onBehalfOf): nothing in the request can change who.
  const identify = async (): Promise<Actor | null> => {
    if (preset) return preset
    if (authorization !== null) {
      const token = bearerToken(authorization)
      return token ? await authenticators.bearer(token) : null
    }
    return cookie ? await authenticators.session(cookie) : null
  }
  const state = requestState(request, deps)
  if ('agent' in spec) {
    const agent = await identify()
    if (!agent) throw unauthorized()
    state.tenantId = agent.tenantId
    if (agent.kind !== 'agent') throw new ProblemError('forbidden', { detail: 'this operation is for agents' })
    setActor(request, agent)
    state.actor = { kind: 'agent', id: agent.tokenId ?? null }
    return
  }
  // A credential verified by an earlier request (PostgreSQL): trusted only once the rate limit's
  // statement has read the credentials' change counter unchanged (one round trip instead of two).
  const bearer = !preset && authorization !== null ? bearerToken(authorization) : null
  const kept =
    bearer !== null
      ? (authenticators.bearerKept?.(bearer) ?? null)
      : !preset && authorization === null && cookie
        ? (authenticators.sessionKept?.(cookie) ?? null)
        : null
  let actor = kept?.actor ?? (await identify())
  if (!actor) throw unauthorized()
  const admit = async (who: Actor) => {
    state.tenantId = who.tenantId
    if (who.via === 'cookie' && !SAFE_METHODS.has(request.method)) {
      const site = request.headers.get('sec-fetch-site')
      const origin = request.headers.get('origin')
      if (site === 'cross-site' || (origin !== null && origin !== deps.config.publicUrl))
        throw new ProblemError('csrf_rejected', { detail: 'cross-site request refused' })
    }
    state.actor = { kind: who.kind, id: who.kind === 'user' ? who.userId : (who.tokenId ?? null) }
    const context = { method: request.method, route, params, planFeatures: await featuresFor(authenticators, spec, who) }
    authorize(who, spec, context)
    return context
  }
  let context: Awaited<ReturnType<typeof admit>> | null = null
  // The route's first read, sent with the count (PostgreSQL; src/platform/rate-limit.ts `Rider`).
  const rider = riderOf(request.method, route)
  let confirmed = false
  /** The caller this request was counted for already (a kept verification the counter did not confirm). */
  let counted: Actor | null = null
  if (kept) {
    try {
      context = await admit(actor)
      const taken = await takeRequestRateLimits(deps, actor, request.method, rider)
      // Read for the tenant the kept verification names; the handler takes it only for its caller's.
      keepRode(request, taken.rode)
      confirmed = taken.epoch === kept.epoch
      if (confirmed && taken.retryAfterSeconds !== null) throw problems.rateLimited(taken.retryAfterSeconds)
      // Counted already: the rows read afresh below name the same caller unless the counter moved for them.
      if (!confirmed && taken.retryAfterSeconds === null) counted = actor
    } catch (e) {
      // A refusal on the strength of a kept verification is decided again on the rows as they are now.
      if (!(e instanceof ProblemError) || confirmed) throw e
    }
    if (!confirmed) {
      actor = await identify()
      if (!actor) throw unauthorized()
    }
  }
  if (!confirmed) {
    context = await admit(actor)
    const same = counted && counted.tokenId === actor.tokenId && counted.userId === actor.userId && counted.tenantId === actor.tenantId
    if (!same) keepRode(request, await enforceRequestRateLimits(deps, actor, request.method, rider))
  }
  setActor(request, actor)
  const settled = actor
  const settledContext = context!
  rechecks.set(request, async () => {
    const again = await identify()
    if (!again || again.tenantId !== settled.tenantId) return null
    try {
      authorize(again, spec, { ...settledContext, planFeatures: await featuresFor(authenticators, spec, again) })
      return again
    } catch (e) {
      if (e instanceof ProblemError) return null
      throw e
    }
  })
}
