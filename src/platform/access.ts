import type { Deps } from './context'
import { requestState } from './http'
import { ProblemError } from './problem'

/**
 * Who is calling and whether they may: every route declares an AccessSpec next to itself (it also
 * lands in the OpenAPI document as `x-gpuhq-access`), and one check runs for every request before
 * its body is validated, so an anonymous caller gets 401 and a caller without the role 403 whatever
 * they sent.
 */

export const ROLES = ['viewer', 'operator', 'admin', 'owner'] as const
export type Role = (typeof ROLES)[number]

export function roleAtLeast(role: Role, minimum: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(minimum)
}

export type AccessSpec =
  | {
      public: true
      /** A deployment switch that must be on, else the operation answers 404 (signup). */
      requires?: 'signup'
    }
  | {
      /** Lowest member role allowed. */
      role: Role
      /** Browser session only (no bearer tokens), e.g. minting tokens. */
      cookieOnly?: boolean
    }

export type Actor = {
  kind: 'user'
  via: 'cookie' | 'bearer'
  userId: string
  tenantId: string
  role: Role
  sessionId?: string
}

export const SESSION_COOKIE = '__Host-gpuhq_session'

export type Authenticators = {
  /** Resolves a session cookie's value to its actor, or null when unknown or expired. */
  session: (token: string) => Actor | null
  /** Resolves an Authorization: Bearer token, or null. */
  bearer: (token: string) => Actor | null
}

const actors = new WeakMap<Request, Actor>()
const checked = new WeakSet<Request>()

export function actorOf(request: Request): Actor {
  const actor = actors.get(request)
  if (!actor) throw new Error('actorOf() called on a route without authentication')
  return actor
}

export function optionalActor(request: Request): Actor | null {
  return actors.get(request) ?? null
}

/** The OpenAPI `detail` of a route, carrying its access declaration. */
export function describe(spec: AccessSpec, doc: { tags: string[]; summary: string; description?: string }) {
  const security: Record<string, string[]>[] =
    'public' in spec ? [] : spec.cookieOnly ? [{ session: [] }] : [{ session: [] }, { bearer: [] }]
  const who = 'public' in spec ? 'Public: no credentials.' : `Requires ${spec.cookieOnly ? 'a browser session cookie' : 'a session cookie or a bearer token'}; role ${spec.role} or above.`
  return {
    ...doc,
    description: doc.description ? `${doc.description}\n\n${who}` : who,
    security,
    'x-gpuhq-access': spec,
  }
}

/** Access declarations by "METHOD /route/template", read from the registered routes. */
export function buildAccessIndex(routes: { method: string; path: string; hooks?: { detail?: Record<string, unknown> } }[]) {
  const index = new Map<string, AccessSpec>()
  for (const r of routes) {
    const spec = r.hooks?.detail?.['x-gpuhq-access'] as AccessSpec | undefined
    if (spec) index.set(`${r.method} ${r.path}`, spec)
  }
  return index
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

function cookieValue(header: string | null, name: string): string | null {
  if (!header) return null
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return null
}

/**
 * Runs once per request (from the parse or transform hook, whichever comes first): identifies the
 * caller and applies the route's declaration. Routes without a declaration (health, problem pages,
 * test-clock routes) are open.
 */
export function ensureAccess(
  deps: Deps,
  index: Map<string, AccessSpec>,
  authenticators: Authenticators,
  request: Request,
  route: string,
): void {
  if (checked.has(request)) return
  checked.add(request)
  const spec = index.get(`${request.method} ${route}`) ?? (request.method === 'HEAD' ? index.get(`GET ${route}`) : undefined)
  if (!spec) return
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
    if (actor && spec.cookieOnly) throw new ProblemError('forbidden', { detail: 'this operation needs a browser session, not a token' })
  } else if (cookie) {
    actor = authenticators.session(cookie)
  }
  if (!actor)
    throw new ProblemError('unauthorized', { detail: 'missing or invalid credentials', headers: { 'WWW-Authenticate': 'Bearer realm="gpuhq"' } })

  if (actor.via === 'cookie' && !SAFE_METHODS.has(request.method)) {
    const site = request.headers.get('sec-fetch-site')
    const origin = request.headers.get('origin')
    if (site === 'cross-site' || (origin !== null && origin !== deps.config.publicUrl))
      throw new ProblemError('csrf_rejected', { detail: 'cross-site request refused' })
  }
  if (!roleAtLeast(actor.role, spec.role))
    throw new ProblemError('forbidden', { detail: `this operation needs the ${spec.role} role or above` })

  actors.set(request, actor)
  requestState(request, deps).tenantId = actor.tenantId
}
