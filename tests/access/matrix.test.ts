import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { call, mintPat } from '../support/access'
import { allRoutes, protectedRoutes, runAccessMatrix, type Fixture, type MatrixContext, type MatrixReport } from '../support/access-matrix'
import { startTestApp, type TestApp } from '../support/app'
import { connectClient, enableAccess } from '../support/mcp'

/**
 * Issue 4, "Done when": the permission matrix runs against every protected route of the app.
 * A new route with a path parameter must register a fixture here, or this file fails.
 */
const server = async ({ owner, newServer }: MatrixContext) => ({ params: { id: await newServer(owner.tenantId) } })
const keepOn = async (ctx: MatrixContext) => ({ params: { ...(await server(ctx)).params, marketplace: 'marketplace_a' } })
const group = async ({ app, owner }: MatrixContext) => {
  const id = app.deps.newId()
  await app.deps.db.run(
    sql`INSERT INTO server_groups (id, tenant_id, name, position, version, created_at) VALUES (${id}, ${owner.tenantId}, ${`group ${id}`}, 1, 1, ${app.deps.clock.nowUs()})`,
  )
  return { params: { id } }
}

/** A listing profile of a new group of the tenant, written as the service would. */
const listingProfile = async (ctx: MatrixContext) => {
  const { app, owner } = ctx
  const groupId = (await group(ctx)).params.id
  const id = app.deps.newId()
  const now = app.deps.clock.nowUs()
  await app.deps.db.run(
    sql`INSERT INTO listing_profiles (id, tenant_id, group_id, marketplace, name, version, created_at, updated_at) VALUES (${id}, ${owner.tenantId}, ${groupId}, 'marketplace_a', 'matrix profile', 1, ${now}, ${now})`,
  )
  return { params: { id } }
}

/** A queued command (and its log) on a new server of the tenant, written as the service would. */
const command = async ({ app, owner, newServer }: MatrixContext) => {
  const id = app.deps.newId()
  const logId = app.deps.newId()
  const now = app.deps.clock.nowUs()
  await app.deps.db.run(sql`INSERT INTO commands (id, tenant_id, server_id, type, schema_version, params, requires, delivery_status, execution_status, issued_by_type, created_at, accept_by, deadline, send_count, version)
     VALUES (${id}, ${owner.tenantId}, ${await newServer(owner.tenantId)}, 'diagnostics.run', 1, '{}', 'none', 'queued', 'not_started', 'system', ${now}, ${now + 3_600_000_000}, ${now + 7_200_000_000}, 0, 1)`)
  await app.deps.db.run(sql`INSERT INTO command_logs (id, command_id, text, bytes, truncated, updated_at) VALUES (${logId}, ${id}, ${'ok\n'}, 3, 0, ${now})`)
  return { params: { id, log_id: logId } }
}

/** A top-up of the tenant, as POST /billing/topups leaves it before the provider answers. */
const topup = async ({ app, owner }: MatrixContext) => {
  const id = app.deps.newId()
  const now = app.deps.clock.nowUs()
  await app.deps.db.run(sql`INSERT INTO topups (id, tenant_id, provider, payment_method, amount_micros, purpose_kind, status, credited_micros, created_at, expires_at, updated_at, version)
     VALUES (${id}, ${owner.tenantId}, 'sandbox', 'card', 10000000, 'wallet', 'creating', 0, ${now}, ${now + 86_400_000_000}, ${now}, 1)`)
  return { params: { topup_id: id } }
}

/** A pending (scheduled) plan change of the tenant. */
const planChange = async ({ app, owner }: MatrixContext) => {
  const id = app.deps.newId()
  const now = app.deps.clock.nowUs()
  await app.deps.db.run(sql`INSERT INTO subscription_changes (id, tenant_id, from_plan, target_plan, direction, status, effective_at, billing_effective_day, required_reserve_micros, requested_at)
     VALUES (${id}, ${owner.tenantId}, 'starter', 'free', 'downgrade', 'scheduled', ${now + 86_400_000_000 * 30}, '2099-01-01', 0, ${now})`)
  return { params: { id } }
}

/** An open offline incident of a new server of the tenant, as the alerts reaction leaves it. */
const incident = async ({ app, owner, newServer }: MatrixContext) => {
  const id = app.deps.newId()
  const serverId = await newServer(owner.tenantId)
  const now = app.deps.clock.nowUs()
  await app.deps.db.run(sql`INSERT INTO alert_incidents (id, tenant_id, kind, cause_key, severity, server_id, title, detail, state, opened_at, last_seen_at, occurrences, notification_ids)
     VALUES (${id}, ${owner.tenantId}, 'offline', ${`offline:${serverId}`}, 'critical', ${serverId}, 'Server offline: matrix rig', 'offline: session closed', 'open', ${now}, ${now}, 1, '[]')`)
  return { params: { id } }
}

/** A server of tenant A at a marketplace (no link there: the access checks come first). */
async function linkOf({ owner, newServer }: Parameters<Fixture>[0]) {
  return { params: { server_id: await newServer(owner.tenantId), marketplace: 'marketplace_a' } }
}

/** A pricing policy of tenant A (targeting a GPU model), as POST /strategy/policies stores it. */
const policy = async ({ app, owner }: MatrixContext) => {
  const id = app.deps.newId()
  const now = app.deps.clock.nowUs()
  await app.deps.db.run(sql`INSERT INTO strategy_policies (id, tenant_id, name, marketplace, target, min_margin_percent, target_percentile, rounding_step_micros, cadence_minutes, raise_while_rented, enabled, version, created_at, updated_at)
     VALUES (${id}, ${owner.tenantId}, 'matrix policy', 'marketplace_a', '{"kind":"gpu_model","gpuModel":"rtx_4090"}', '0', 50, 10000, 60, 'hold', 1, 1, ${now}, ${now})`)
  return { params: { id } }
}

/** A watchdog rule of tenant A (off, on every server), as POST /watchdog/rules stores it. */
const watchdogRule = async ({ app, owner }: MatrixContext) => {
  const id = app.deps.newId()
  const now = app.deps.clock.nowUs()
  await app.deps.db.run(sql`INSERT INTO watchdog_rules (id, tenant_id, name, preset, enabled, enabled_at, server_id, group_id, condition, steps, allow_during_rental, created_at, updated_at, version)
     VALUES (${id}, ${owner.tenantId}, 'matrix rule', NULL, 0, NULL, NULL, NULL, '{"kind":"xid","xids":[79]}', '[{"action":"notify","settle_minutes":10,"max_per_hour":1,"max_per_day":3}]', 0, ${now}, ${now}, 1)`)
  return { params: { id } }
}

/** A drain of a new server of tenant A waiting for the rental's end, as POST /servers/{id}/drain leaves it (no links). */
const drain = async ({ app, owner, newServer }: MatrixContext) => {
  const id = app.deps.newId()
  const serverId = await newServer(owner.tenantId)
  const now = app.deps.clock.nowUs()
  await app.deps.db.run(sql`INSERT INTO drains (id, tenant_id, server_id, live_server_id, group_id, state, reason, maintenance_window, links, work, command_ids, failure, failed_step, created_at, updated_at, finished_at, version)
     VALUES (${id}, ${owner.tenantId}, ${serverId}, ${serverId}, NULL, 'awaiting_rental_end', NULL, ${JSON.stringify({ starts_at_us: now + 3_600_000_000, hours: 2, category: 'software' })}, '[]', '[]', '[]', NULL, NULL, ${now}, ${now}, NULL, 1)`)
  return { params: { id } }
}

/** A running bulk operation of tenant A with one pending item, as POST /bulk-operations stores it. */
const bulkOperation = async ({ app, owner, newServer }: MatrixContext) => {
  const id = app.deps.newId()
  const now = app.deps.clock.nowUs()
  await app.deps.db.run(sql`INSERT INTO bulk_operations (id, tenant_id, marketplace, action, change, selection, state, actor_kind, actor_id, created_at, finished_at)
     VALUES (${id}, ${owner.tenantId}, 'marketplace_a', 'withdraw', '{}', '{}', 'running', 'user', NULL, ${now}, NULL)`)
  await app.deps.db.run(sql`INSERT INTO bulk_items (id, operation_id, tenant_id, position, server_id, server_name, external_machine_id, state, before, after, reason, attempts, updated_at, finished_at)
     VALUES (${app.deps.newId()}, ${id}, ${owner.tenantId}, 0, ${await newServer(owner.tenantId)}, 'matrix rig', '501', 'pending', NULL, NULL, NULL, 0, ${now}, NULL)`)
  return { params: { id } }
}

/** A pending suggestion of tenant A for a new server of the tenant. */
const suggestion = async (ctx: MatrixContext) => {
  const { app, owner, newServer } = ctx
  const id = app.deps.newId()
  await app.deps.db.run(sql`INSERT INTO strategy_suggestions (id, tenant_id, policy_id, server_id, marketplace, state, evaluation, offer, current_micros, suggested_micros, created_at)
     VALUES (${id}, ${owner.tenantId}, ${(await policy(ctx)).params.id}, ${await newServer(owner.tenantId)}, 'marketplace_a', 'pending', '{}', '{"price_gpu_hour":"0.40"}', 500000, 400000, ${app.deps.clock.nowUs()})`)
  return { params: { id } }
}

/** Real resources of tenant A per route; a PATCH also gives a valid body (see the helper). */
/** A client connected to tenant A through the OAuth flow (AI access enabled first). */
async function mcpClient(app: Parameters<Fixture>[0]['app'], owner: Parameters<Fixture>[0]['owner']) {
  await enableAccess(app, owner)
  return connectClient(app, owner)
}

const FIXTURES: Record<string, Fixture> = {
  'DELETE /api/v1/tokens/:id': async ({ app, owner }) => ({ params: { id: (await mintPat(app, owner, { name: 'matrix fixture' })).id } }),
  'GET /api/v1/servers/:id': server,
  'GET /api/v1/strategy/policies/:id': policy,
  'PATCH /api/v1/strategy/policies/:id': async (ctx) => ({ ...(await policy(ctx)), body: { name: 'renamed policy' } }),
  'DELETE /api/v1/strategy/policies/:id': policy,
  'POST /api/v1/strategy/suggestions/:id/accept': suggestion,
  'POST /api/v1/strategy/suggestions/:id/dismiss': async (ctx) => ({ ...(await suggestion(ctx)), body: { reason: 'matrix' } }),
  'PATCH /api/v1/servers/:id': async (ctx) => ({ ...(await server(ctx)), body: { name: 'renamed' } }),
  'POST /api/v1/servers/:id/decommission': server,
  'PUT /api/v1/servers/:id/keep-on/:marketplace': keepOn,
  'DELETE /api/v1/servers/:id/keep-on/:marketplace': keepOn,
  'PUT /api/v1/servers/:id/maintenance': server,
  'DELETE /api/v1/servers/:id/maintenance': server,
  'GET /api/v1/servers/:id/events': server,
  'GET /api/v1/servers/:id/readiness': server,
  'GET /api/v1/servers/:id/metrics': server,
  'GET /api/v1/groups/:id': group,
  'PATCH /api/v1/groups/:id': async (ctx) => ({ ...(await group(ctx)), body: { name: 'renamed group' } }),
  'DELETE /api/v1/groups/:id': group,
  'GET /api/v1/bulk-operations/:id': bulkOperation,
  'POST /api/v1/bulk-operations/:id/cancel': bulkOperation,
  'GET /api/v1/watchdog/rules/:id': watchdogRule,
  'PATCH /api/v1/watchdog/rules/:id': async (ctx) => ({ ...(await watchdogRule(ctx)), body: { name: 'renamed rule' } }),
  'DELETE /api/v1/watchdog/rules/:id': watchdogRule,
  'GET /api/v1/commands/:id': command,
  'GET /api/v1/commands/:id/timeline': command,
  'GET /api/v1/commands/:id/logs/:log_id': command,
  'POST /api/v1/commands/:id/cancel': command,
  // A day is no tenant resource (another tenant reads its own, empty, day): no wrong-tenant check.
  'GET /api/v1/billing/charges/:day.csv': () => ({ params: { day: '2026-11-22' } }),
  'GET /api/v1/billing/topups/:topup_id': topup,
  'DELETE /api/v1/subscription/changes/:id': planChange,
  // A marketplace is no tenant resource (another tenant has its own connection or none).
  'PUT /api/v1/marketplaces/:marketplace': () => ({ params: { marketplace: 'marketplace_a' }, body: { api_key: 'matrix-key' } }),
  'DELETE /api/v1/marketplaces/:marketplace': () => ({ params: { marketplace: 'marketplace_a' } }),
  'GET /api/v1/servers/:id/operations': server,
  'GET /api/v1/servers/:id/renter-reports': server,
  'GET /api/v1/notifications/deliveries/:delivery_id': async ({ app, owner }) => {
    // A real delivery of tenant A: the account email connected, then a test through it.
    await call(app, 'POST', '/notifications/email/connect', owner, { json: {} })
    const res = await call(app, 'POST', '/notifications/test', owner, { json: { channels: ['email'] } })
    const body = (await res.json()) as { deliveries: { id: string }[] }
    return { params: { delivery_id: body.deliveries[0]!.id } }
  },
  'GET /api/v1/mcp/clients/:client_id': async ({ app, owner }) => ({ params: { client_id: (await mcpClient(app, owner)).client.client_id } }),
  'DELETE /api/v1/mcp/clients/:client_id': async ({ app, owner }) => ({ params: { client_id: (await mcpClient(app, owner)).client.client_id } }),
  'DELETE /api/v1/marketplaces/links/:server_id/:marketplace': linkOf,
  'PUT /api/v1/marketplaces/links/:server_id/:marketplace/offer': async (ctx) => ({ ...(await linkOf(ctx)), body: { price_gpu_hour: '0.40' } }),
  'DELETE /api/v1/marketplaces/links/:server_id/:marketplace/offer': linkOf,
  'PUT /api/v1/marketplaces/links/:server_id/:marketplace/maintenance': async (ctx) => ({
    ...(await linkOf(ctx)),
    body: { starts_at: '2099-01-01T00:00:00Z', hours: 2, category: 'power' },
  }),
  'DELETE /api/v1/marketplaces/links/:server_id/:marketplace/maintenance': linkOf,
  'PUT /api/v1/marketplaces/links/:server_id/:marketplace/rolling-end-date': async (ctx) => ({ ...(await linkOf(ctx)), body: { days: 30 } }),
  'DELETE /api/v1/marketplaces/links/:server_id/:marketplace/rolling-end-date': linkOf,
  'PUT /api/v1/marketplaces/links/:server_id/:marketplace/idle-job': async (ctx) => ({
    ...(await linkOf(ctx)),
    body: { image: 'host/idle:1', price_gpu_hour: '0.05' },
  }),
  'DELETE /api/v1/marketplaces/links/:server_id/:marketplace/idle-job': linkOf,
  'GET /api/v1/listing-profiles/:id': listingProfile,
  'PATCH /api/v1/listing-profiles/:id': async (ctx) => ({ ...(await listingProfile(ctx)), body: { name: 'renamed profile' } }),
  'DELETE /api/v1/listing-profiles/:id': listingProfile,
  'POST /api/v1/listing-profiles/:id/apply': listingProfile,
  // A report is no tenant resource (another tenant reads its own report): no wrong-tenant check.
  'GET /api/v1/reports/:report': () => ({ params: { report: 'spend' } }),
  'GET /api/v1/alerts/:id': incident,
  'POST /api/v1/alerts/:id/acknowledge': incident,
  'POST /api/v1/alerts/:id/resolve': incident,
  'POST /api/v1/servers/:id/drain': async (ctx) => ({ ...(await server(ctx)), body: {} }),
  'POST /api/v1/groups/:id/drain': async (ctx) => ({ ...(await group(ctx)), body: {} }),
  'GET /api/v1/drains/:id': drain,
  'POST /api/v1/drains/:id/cancel': drain,
  // The threshold is the tenant's own setting (another tenant sets its own): a valid body, no wrong-tenant check.
  'PUT /api/v1/reconciliation/settings': () => ({ params: {}, body: { gap_threshold_usd: '2.00' } }),
}

/** Routes that deliberately carry no access declaration: documentation and the test-only clock. */
const UNDECLARED = [/^GET \/api\/v1\/(docs|openapi\.json)$/, /^[A-Z]+ \/api\/v1\/_test\//]

let app: TestApp
let report: MatrixReport
let cannotRun: unknown = null
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  // A route without its fixture fails the first test with the helper's message, naming the route.
  report = await runAccessMatrix(app, FIXTURES).catch((e) => {
    cannotRun = e
    return { routes: [], checks: {}, failures: [] }
  })
})
afterAll(() => app.close())

describe('the permission matrix', () => {
  test('every protected route refuses each caller it must refuse, with the declared problem', () => {
    if (cannotRun) throw cannotRun
    expect(report.failures).toEqual([])
  })

  test('the matrix covered at least the routes protected today, with every check their declaration calls for', () => {
    if (cannotRun) throw cannotRun
    for (const key of [
      'GET /api/v1/me',
      'PATCH /api/v1/me',
      'GET /api/v1/users',
      'DELETE /api/v1/auth/sessions/current',
      'POST /api/v1/tokens',
      'GET /api/v1/tokens',
      'DELETE /api/v1/tokens/:id',
      'POST /api/v1/tokens/init',
      'GET /api/v1/audit',
    ])
      expect(report.routes).toContain(key)
    expect(report.checks['GET /api/v1/me']).toEqual(['unauthenticated'])
    expect(report.checks['PATCH /api/v1/me']).toEqual(['unauthenticated', 'scope'])
    expect(report.checks['POST /api/v1/tokens']).toEqual(['unauthenticated', 'scope', 'plan_required'])
    expect(report.checks['DELETE /api/v1/tokens/:id']).toEqual(['unauthenticated', 'wrong tenant', 'scope'])
    expect(report.checks['POST /api/v1/tokens/init']).toEqual(['unauthenticated', 'role:viewer', 'scope', 'frozen', 'plan_required'])
    expect(report.checks['GET /api/v1/audit']).toEqual(['unauthenticated', 'role:viewer', 'role:operator', 'scope'])
    expect(report.checks['PATCH /api/v1/servers/:id']).toEqual(['unauthenticated', 'wrong tenant', 'role:viewer', 'scope', 'allowlist'])
    expect(report.checks['GET /api/v1/servers/:id/events']).toEqual(['unauthenticated', 'wrong tenant', 'scope', 'allowlist'])
    // The live stream needs any one of its areas' scopes: a token with none of them is refused.
    expect(report.checks['GET /api/v1/events/stream']).toEqual(['unauthenticated', 'scope'])
    expect(report.checks['POST /api/v1/agent/hello']).toEqual(['unauthenticated', 'not an agent'])
    // anyScope: a PAT holding every scope but the listed ones is refused.
    expect(report.checks['GET /api/v1/metrics/prometheus']).toEqual(['unauthenticated', 'scope'])
  })

  test('every /api/v1 route declares who may call it, except the documentation and the test clock', () => {
    const undeclared = allRoutes(app)
      .filter((r) => r.key.includes(' /api/v1/') && r.spec === undefined)
      .map((r) => r.key)
      .filter((k) => !UNDECLARED.some((re) => re.test(k)))
    expect(undeclared).toEqual([])
  })

  test('a protected route with an id parameter and no fixture stops the matrix before any request, naming the route', async () => {
    const before = (await app.deps.db.get(sql`SELECT count(*) AS n FROM users`)) as { n: number }
    await expect(runAccessMatrix(app, {})).rejects.toThrow(/DELETE \/api\/v1\/tokens\/:id: no fixture for :id/)
    const after = (await app.deps.db.get(sql`SELECT count(*) AS n FROM users`)) as { n: number }
    expect(after.n).toBe(before.n)
  })

  test('each protected route also shows its access declaration in the OpenAPI document', async () => {
    const doc = (await (await app.fetch('/api/v1/openapi.json')).json()) as { paths: Record<string, Record<string, Record<string, unknown>>> }
    for (const r of protectedRoutes(app)) {
      const op = doc.paths[r.path.replace(/:(\w+)/g, '{$1}')]?.[r.method.toLowerCase()]
      expect({ route: r.key, access: op?.['x-gpuhq-access'] }).toEqual({ route: r.key, access: r.spec })
    }
  })
})
