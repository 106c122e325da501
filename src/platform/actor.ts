/**
 * Who is calling: member roles, token scopes, the actor a request authenticated as, and the
 * methods that never change state. Shared by the access check (access.ts), the allowlist
 * (allowlist.ts) and the rate limits (rate-limit.ts); it imports none of them.
 */

export const ROLES = ['viewer', 'operator', 'admin', 'owner'] as const
export type Role = (typeof ROLES)[number]

const SCOPE_AREAS = ['servers', 'commands', 'billing', 'marketplaces', 'notifications', 'strategy', 'audit'] as const
export type Scope = `${(typeof SCOPE_AREAS)[number]}:${'read' | 'write'}`
export const ALL_SCOPES: Scope[] = SCOPE_AREAS.flatMap((a) => [`${a}:read`, `${a}:write`] as Scope[])

/** The most each role can do; a token's scopes are always cut down to its creator's current role. */
export const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  viewer: ALL_SCOPES.filter((s) => s.endsWith(':read') && s !== 'audit:read'),
  operator: [...ALL_SCOPES.filter((s) => s.endsWith(':read') && s !== 'audit:read'), 'servers:write', 'commands:write'],
  admin: ALL_SCOPES,
  owner: ALL_SCOPES,
}

const ENTITLEMENTS = ['strategy', 'ai_access'] as const
export type Entitlement = (typeof ENTITLEMENTS)[number]

export function roleAtLeast(role: Role, minimum: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(minimum)
}

type TenantContext = { planCode: string | null; accountState: 'active' | 'grace' | 'frozen' }

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

/** Methods that never change state: no CSRF check, and a token without a scope may use them. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS'])

const actors = new WeakMap<Request, Actor>()

/** Records who a request authenticated as (access.ts, once per request). */
export function setActor(request: Request, actor: Actor): void {
  actors.set(request, actor)
}

/** The actor of an authenticated request, or undefined before (or without) authentication. */
export function actorIfAny(request: Request): Actor | undefined {
  return actors.get(request)
}

export function actorOf(request: Request): Actor {
  const actor = actors.get(request)
  if (!actor) throw new Error('actorOf() called on a route without authentication')
  return actor
}

/** True when the actor may see this server at all (allowlist caveat); lists filter with it. */
export function mayAccessServer(actor: Actor, serverId: string): boolean {
  return actor.serverAllowlist === null || actor.serverAllowlist.includes(serverId.toLowerCase())
}
