import { createApp } from '../../src/app'
import { ALL_SCOPES, ROLES, type AccessSpec, type Role } from '../../src/platform/access'
import { addMember, call, insertServer, mintPat, newTenant, setAccountState, setPlan, type Caller, type Member } from './access'
import type { TestApp } from './app'

/**
 * The permission matrix, run against every protected route of the real app (every route whose
 * OpenAPI detail carries an `x-gpuhq-access` declaration without `public`). For each route it
 * sends real HTTP requests that must be refused, with an empty body (access is decided before
 * validation), and checks the refusal is the declared one:
 *
 *   unauthenticated  no credential, an unknown session cookie, a malformed bearer → 401 unauthorized
 *   wrong tenant     the owner of another tenant names this tenant's resource     → 404 not_found
 *   role:<r>         each role below the declared minimum (viewer first)         → 403 forbidden
 *   scope            a PAT holding every scope but the declared one (or but all of
 *                    anyScope); any PAT on a cookie-only route; any PAT on an
 *                    unsafe route without scope                                   → 403 forbidden
 *   allowlist        a PAT whose server_allowlist names another server           → 404 not_found
 *   frozen / grace   the account frozen (denyFrozen) or in grace (denyGrace)     → 403 account_frozen / account_in_grace
 *   plan_required    the tenant has no plan (requiresPlan)                        → 409 plan_required
 *   entitlement      the free plan on a route needing a plan feature             → 403 feature_not_entitled
 *   not an agent     (routes declared `agent: true`) a member's session or a PAT  → 403 forbidden
 *   not an AI token  (routes declared `mcp: true`) a member's session or a PAT  → 401 unauthorized
 *                    (they accept only the AI-assistant token; a plan without ai_access → 403)
 *
 * Path parameters: a route with any path parameter needs a fixture (key "METHOD /path") that
 * returns real values belonging to tenant A (the owner in the context); the wrong-tenant check
 * needs a real resource, so a route without a fixture fails the run before any request is sent.
 * The wrong-tenant caller passes access, so its body is validated before the handler looks the
 * resource up: a fixture gives a valid `body` for routes whose body must not be empty.
 */

export type MatrixContext = {
  app: TestApp
  /** Owner of tenant A, the tenant whose resources the fixtures return. */
  owner: Member
  newServer: (tenantId: string) => Promise<string>
}
type FixtureValue = { params: Record<string, string>; body?: unknown }
export type Fixture = (ctx: MatrixContext) => Promise<FixtureValue> | FixtureValue
type Declared = Exclude<AccessSpec, { public: true }>
export type ProtectedRoute = { method: string; path: string; key: string; spec: Declared; params: string[] }
export type MatrixReport = { routes: string[]; checks: Record<string, string[]>; failures: string[] }

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS'])
const ID_LIKE = /(^id$|_id$|Id$)/

/** Every route of the real app with a non-public access declaration, read from the app itself. */
export function protectedRoutes(app: TestApp): ProtectedRoute[] {
  const seen = new Map<string, ProtectedRoute>()
  for (const r of createApp(app.deps, app.runner).routes) {
    const spec = (r.hooks as { detail?: Record<string, unknown> } | undefined)?.detail?.['x-gpuhq-access'] as AccessSpec | undefined
    if (!spec || 'public' in spec) continue
    const key = `${r.method} ${r.path}`
    seen.set(key, { method: r.method, path: r.path, key, spec, params: [...r.path.matchAll(/:(\w+)/g)].map((m) => m[1]!) })
  }
  return [...seen.values()]
}

/** Every route of the app as "METHOD /path", with its declaration or undefined. */
export function allRoutes(app: TestApp): { key: string; spec: AccessSpec | undefined }[] {
  return createApp(app.deps, app.runner).routes.map((r) => ({
    key: `${r.method} ${r.path}`,
    spec: (r.hooks as { detail?: Record<string, unknown> } | undefined)?.detail?.['x-gpuhq-access'] as AccessSpec | undefined,
  }))
}

/** Failure text, or null when the response is the problem document expected. */
async function mismatch(res: Response, status: number, code: string): Promise<string | null> {
  const text = await res.text()
  if (res.status !== status) return `expected ${status} ${code}, got ${res.status}: ${text.slice(0, 300)}`
  if (res.headers.get('content-type') !== 'application/problem+json') return `expected a problem document, got ${res.headers.get('content-type')}`
  try {
    const doc = JSON.parse(text) as { code?: string; status?: number }
    if (doc.code !== code || doc.status !== status) return `expected ${status} ${code}, got a problem with ${doc.status} ${doc.code}`
  } catch {
    return `the body is not JSON: ${text.slice(0, 200)}`
  }
  if (status === 401 && !res.headers.get('www-authenticate')) return '401 without WWW-Authenticate'
  return null
}

/** Throws, naming every route, when a route with path parameters has no fixture (or a fixture names no route). */
function assertFixtures(routes: ProtectedRoute[], fixtures: Record<string, Fixture>): void {
  const missing = routes.filter((r) => r.params.length > 0 && !fixtures[r.key])
  const stale = Object.keys(fixtures).filter((k) => !routes.some((r) => r.key === k))
  const lines: string[] = []
  for (const r of missing)
    lines.push(
      `${r.key}: no fixture for :${r.params.join(', :')}. Register one in the access matrix fixtures that returns a real resource of tenant A (the wrong-tenant check needs one).`,
    )
  for (const k of stale) lines.push(`${k}: a fixture is registered but the app has no such protected route.`)
  if (lines.length) throw new Error(`access matrix cannot run:\n  ${lines.join('\n  ')}`)
}

/** Runs the matrix; returns what was checked and every failure (an empty list when all held). */
export async function runAccessMatrix(app: TestApp, fixtures: Record<string, Fixture>): Promise<MatrixReport> {
  const routes = protectedRoutes(app)
  assertFixtures(routes, fixtures)

  // Tenant A (resources, members of every role), tenant B (the stranger) and tenant S, whose plan
  // and state each check sets. A, B and S are on pro so entitlements never mask what is checked.
  const owner = await newTenant(app, 'matrix-a')
  const stranger = await newTenant(app, 'matrix-b')
  const stateOwner = await newTenant(app, 'matrix-s')
  for (const m of [owner, stranger, stateOwner]) await setPlan(app, m.tenantId, 'pro')
  const members: Partial<Record<Role, Member>> = { owner }
  for (const role of ['viewer', 'operator', 'admin'] as const) members[role] = await addMember(app, owner.tenantId, role)

  const ctx: MatrixContext = { app, owner, newServer: (tenantId) => insertServer(app, tenantId, 'matrix rig') }
  const decoy = await ctx.newServer(owner.tenantId)
  const pats = new Map<string, string>()
  const patWithout = async (scope: string | readonly string[] | null, allowlist?: string[]) => {
    const without = typeof scope === 'string' ? [scope] : (scope ?? [])
    const k = `${without.join(',')}|${allowlist?.join(',') ?? ''}`
    if (!pats.has(k)) {
      const scopes = ALL_SCOPES.filter((s) => !without.includes(s))
      pats.set(k, (await mintPat(app, owner, { name: `matrix ${k}`, scopes, ...(allowlist ? { server_allowlist: allowlist } : {}) })).token)
    }
    return pats.get(k)!
  }

  let mcpToken: string | null = null
  /** The tenant's AI-assistant token, enabled once (read tools). */
  const mcpTokenOf = async (member: Member) => {
    if (!mcpToken) {
      const res = await call(app, 'PUT', '/mcp/access', member, { json: { enabled: true } })
      mcpToken = ((await res.json()) as { token: string }).token
    }
    return mcpToken
  }

  const report: MatrixReport = { routes: routes.map((r) => r.key), checks: {}, failures: [] }
  for (const route of routes) {
    const declared = route.spec
    const fixture: FixtureValue = fixtures[route.key] ? await fixtures[route.key]!(ctx) : { params: {} }
    const params = fixture.params
    const unfilled = route.params.filter((p) => !params[p])
    if (unfilled.length) {
      report.failures.push(`${route.key}: the fixture returned no value for :${unfilled.join(', :')}`)
      continue
    }
    const inApi = route.path.startsWith('/api/v1/')
    const path = (inApi ? route.path.replace(/^\/api\/v1/, '') : `/${route.path}`).replace(/:(\w+)/g, (_, p: string) => encodeURIComponent(params[p]!))
    const json = SAFE.has(route.method) || route.method === 'DELETE' ? undefined : {}
    const checks: string[] = (report.checks[route.key] = [])
    const expectRefusal = async (check: string, caller: Caller, status: number, code: string, headers: Record<string, string> = {}, body = json) => {
      if (!checks.includes(check)) checks.push(check)
      const why = await mismatch(await call(app, route.method, path, caller, { json: body, headers }), status, code)
      if (why) report.failures.push(`${route.key} [${check}]: ${why}`)
    }

    await expectRefusal('unauthenticated', null, 401, 'unauthorized')
    await expectRefusal('unauthenticated', null, 401, 'unauthorized', { cookie: '__Host-gpuhq_session=' + 'x'.repeat(43) })
    await expectRefusal('unauthenticated', 'gpuhq_pat_not-a-real-token', 401, 'unauthorized')

    if ('mcp' in declared) {
      await expectRefusal('not an AI token', owner, 401, 'unauthorized')
      await expectRefusal('not an AI token', await patWithout(null), 401, 'unauthorized')
      if (declared.entitlement) {
        const token = await mcpTokenOf(stateOwner)
        await setPlan(app, stateOwner.tenantId, 'free')
        try {
          await expectRefusal('entitlement', token, 403, 'feature_not_entitled')
        } finally {
          await setPlan(app, stateOwner.tenantId, 'pro')
        }
      }
      continue
    }
    if ('agent' in declared) {
      await expectRefusal('not an agent', owner, 403, 'forbidden')
      await expectRefusal('not an agent', await patWithout(null), 403, 'forbidden')
      continue
    }
    const spec = declared as Extract<Declared, { role: Role }>
    if (route.params.some((p) => ID_LIKE.test(p))) await expectRefusal('wrong tenant', stranger, 404, 'not_found', {}, fixture.body ?? json)

    for (const role of ROLES.slice(0, ROLES.indexOf(spec.role))) await expectRefusal(`role:${role}`, members[role]!, 403, 'forbidden')

    if (spec.cookieOnly) await expectRefusal('scope', await patWithout(null), 403, 'forbidden')
    else if (spec.scope) await expectRefusal('scope', await patWithout(spec.scope), 403, 'forbidden')
    else if (spec.anyScope) await expectRefusal('scope', await patWithout(spec.anyScope), 403, 'forbidden')
    else if (!SAFE.has(route.method)) await expectRefusal('scope', await patWithout(null), 403, 'forbidden')

    if (spec.serverParam && !spec.cookieOnly) {
      if (!params[spec.serverParam]) report.failures.push(`${route.key}: serverParam ${spec.serverParam} is not a path parameter`)
      else await expectRefusal('allowlist', await patWithout(null, [decoy]), 404, 'not_found')
    }

    const asState = async (check: string, plan: string | null, state: 'active' | 'grace' | 'frozen', status: number, code: string) => {
      await setPlan(app, stateOwner.tenantId, plan)
      await setAccountState(app, stateOwner.tenantId, state)
      try {
        await expectRefusal(check, stateOwner, status, code)
      } finally {
        await setPlan(app, stateOwner.tenantId, 'pro')
        await setAccountState(app, stateOwner.tenantId, 'active')
      }
    }
    if (spec.denyFrozen) await asState('frozen', 'pro', 'frozen', 403, 'account_frozen')
    if (spec.denyGrace) await asState('grace', 'pro', 'grace', 403, 'account_in_grace')
    if (spec.requiresPlan) await asState('plan_required', null, 'active', 409, 'plan_required')
    if (spec.entitlement) await asState('entitlement', 'free', 'active', 403, 'feature_not_entitled')
  }
  return report
}
