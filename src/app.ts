import { isPostgres } from '../db/client'
import { Elysia, type AnyElysia } from 'elysia'
import './platform/formats'
import type { Deps } from './platform/context'
import type { JobRunner } from './platform/jobs'
import { createMethodIndex, platform } from './platform/http'
import { buildAccessIndex, ensureAccess, ensureBodyServers, narrowQueryServers, type AccessSpec, type Authenticators } from './platform/access'
import { ProblemSchema } from './platform/schemas'
import { openapiDocument } from './platform/openapi'
import { API_PREFIX } from './platform/api'
import { docsRoutes, systemRoutes } from './modules/system'
import { testingRoutes } from './modules/testing'
import { accountsRoutes } from './modules/accounts'
import { keptSession, resolveSession, sessionsRoutes } from './modules/sessions'
import { usersRoutes } from './modules/users'
import { keptPat, resolvePat, tokensRoutes } from './modules/tokens'
import { auditRoutes } from './modules/audit'
import { agentDownloadRoutes, agentRoutes, resolveAgent } from './modules/agent'
import { serversRoutes, visibleServerId } from './modules/fleet'
import { findGroup, groupsRoutes } from './modules/groups'
import { metricsRoutes } from './modules/telemetry'
import { costsRoutes, platformCuts, serverMargin } from './modules/costs'
import { reportsRoutes } from './modules/reports'
import { notificationsRoutes } from './modules/notifications'
import { earningsRoutes } from './modules/earnings'
import {
  candidatesRoutes,
  linksRoutes,
  listingRoutes,
  maintenanceAnnouncements,
  marketplacesRoutes,
  marketRoutes,
  offersRoutes,
  renterReportsRoutes,
} from './modules/marketplaces'
import { commandsRoutes } from './modules/commands'
import { listingProfilesRoutes } from './modules/listing-profiles'
import { watchdogRoutes } from './modules/watchdog'
import { drainsRoutes } from './modules/drains'
import { bulkRoutes } from './modules/bulk'
import { reconciliationRoutes } from './modules/reconciliation'
import { billingRoutes } from './modules/billing'
import { featuresOfPlan, plansRoutes } from './modules/plans'
import { paymentsRoutes, sandboxRoutes } from './modules/payments'
import { subscriptionRoutes } from './modules/subscription'
import { authenticateMcp, mcpRoutes } from './modules/mcp'
import { strategyRoutes } from './modules/strategy'
import { alertsRoutes } from './modules/alerts'
import { readinessRoutes } from './modules/readiness'
import { prometheusRoutes } from './modules/prometheus'
import { liveRoutes } from './modules/live'
import { consoleRoutes } from './modules/console'

/** The OpenAPI document's own parts: everything but paths and component schemas, which the routes make. */
const DOCUMENTATION = (deps: Deps) => ({
  info: {
    title: 'gpuhq API',
    version: '1.0.0',
    description:
      'Fleet, billing and access service for owners of GPU servers. Every error is an RFC 9457 problem document (application/problem+json) whose `type` is `' +
      `${deps.config.publicUrl}/problems/<code>` +
      '`, except on the OAuth endpoints (marked x-gpuhq-errors: oauth), which answer errors as the OAuth RFCs say (docs/conventions.md). Money is a decimal string, timestamps are RFC 3339 UTC with microseconds.',
  },
  servers: [{ url: deps.config.publicUrl }],
  components: {
    securitySchemes: {
      session: { type: 'apiKey', in: 'cookie', name: '__Host-gpuhq_session', description: 'Browser session cookie from POST /api/v1/auth/sessions' },
      bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <personal access token>' },
    },
  },
  tags: [
    { name: 'system', description: 'Health, readiness and problem pages' },
    { name: 'auth', description: 'Signup, password reset, browser sessions' },
    { name: 'users', description: 'The current user and the members of the tenant' },
    { name: 'tokens', description: 'Personal access tokens and agent init tokens' },
    { name: 'audit', description: 'Who used the account' },
    { name: 'agent', description: 'Agent enrolment, HTTPS hello and the WebSocket session' },
    { name: 'servers', description: 'The fleet: servers, presence, configuration, maintenance, events, dashboard' },
    { name: 'groups', description: 'Server groups' },
    { name: 'commands', description: 'Typed commands delivered to agents' },
    {
      name: 'watchdog',
      description: 'Rules that notify, restart the container runtime, reboot and page when a server is unwell, never under a rental unless told',
    },
    { name: 'plans', description: "The plan catalogue and what the tenant's plan allows" },
    { name: 'billing', description: 'Balance, ledger, hourly charges, top-ups' },
    { name: 'subscription', description: 'Plan changes: quote, order, cancel' },
    { name: 'marketplaces', description: 'Marketplace accounts, links to their machines, and the calls made to them' },
    {
      name: 'strategy',
      description: 'Pricing policies, their price suggestions (accept publishes, dismiss says why) and a preview; plans pro and enterprise',
    },
    {
      name: 'reconciliation',
      description:
        "Payouts reconciled: per day and machine, gpuhq's accrual beside the platform's figures, the commission and the unexplained gap (docs/marketplaces.md)",
    },
    { name: 'reports', description: 'Utilisation, earnings, spend and margin over a range of days, as JSON or CSV (docs/reports.md)' },
    {
      name: 'notifications',
      description: 'Where alerts go (email and Telegram), what was sent and each delivery attempt (docs/notifications.md)',
    },
    { name: 'alerts', description: 'Incidents opened and resolved from events and thresholds, acknowledged and resolved by members' },
    { name: 'monitoring', description: 'The fleet, rentals, earnings and balance as Prometheus metrics, for Prometheus and Grafana' },
    { name: 'events', description: 'The live event stream (Server-Sent Events): presence, commands, rentals, alerts, top-ups' },
    { name: 'ai access', description: 'The AI-assistant token, OAuth for MCP clients, and the MCP gateway at PUBLIC_URL + /mcp' },
    { name: 'console', description: 'The web console: the page at / and its files under /app/ (docs/console.md)' },
    { name: 'test clock', description: 'Only with TEST_CLOCK=true (never in production)' },
  ],
})

/**
 * The HTTP application: platform conventions first (ids, body rules, problem documents), then the
 * OpenAPI document, then every module's routes. No listening here; src/server.ts does that.
 * Typed as any Elysia app: its callers only compile, handle and list routes, and the full type of
 * the chain of every module's routes is past what TypeScript will instantiate.
 */
export function createApp(deps: Deps, runner: JobRunner): AnyElysia {
  const authenticators: Authenticators = {
    session: async (token) => await resolveSession(deps, token),
    bearer: async (token) =>
      token.startsWith('gpuhq_pat_') ? await resolvePat(deps, token) : token.startsWith('gpuhq_agt_') ? await resolveAgent(deps, token) : null,
    mcp: async (token, request) => await authenticateMcp(deps, token, request),
    planFeatures: async (code) => await featuresOfPlan(deps.db, code),
    // On PostgreSQL a kept verification is confirmed by the rate limit's statement (one round trip
    // fewer); on SQLite the change counter's read costs microseconds and is made each time.
    bearerKept: isPostgres(deps.db) ? (token) => (token.startsWith('gpuhq_pat_') ? keptPat(deps, token) : null) : undefined,
    sessionKept: isPostgres(deps.db) ? (token) => keptSession(deps, token) : undefined,
  }
  let allowedMethods: (path: string) => string[] = () => []
  let document: () => unknown = () => {
    throw new Error('the app is not built yet')
  }
  let handleInProcess: (request: Request) => Promise<Response> = () => Promise.reject(new Error('the app is not built yet'))
  let accessIndex = new Map<string, AccessSpec>()
  const formRoutes = new Set([`POST ${API_PREFIX}/mcp/token`, `POST ${API_PREFIX}/mcp/revoke`])
  const app = new Elysia({ normalize: false })
    .use(
      platform(deps, {
        allowedMethods: (p) => allowedMethods(p),
        checkAccess: (request, route, params) => ensureAccess(deps, accessIndex, authenticators, request, route, params),
        formRoutes,
        checkBody: ensureBodyServers,
        checkQuery: narrowQueryServers,
      }),
    )
    .model({ Problem: ProblemSchema })
    // The OpenAPI document (src/platform/openapi.ts), built from every route below at the first
    // request; Swagger UI (docsRoutes) renders it from the pinned swagger-ui-dist, so no CDN.
    .get(`${API_PREFIX}/openapi.json`, () => document(), { detail: { hide: true } })
    .use(docsRoutes(deps))
    .use(systemRoutes(deps))
    .use(accountsRoutes(deps))
    .use(sessionsRoutes(deps))
    .use(usersRoutes(deps))
    .use(tokensRoutes(deps))
    .use(auditRoutes(deps))
    .use(agentRoutes(deps))
    .use(agentDownloadRoutes(deps))
    .use(serversRoutes(deps, findGroup, maintenanceAnnouncements, serverMargin))
    .use(groupsRoutes(deps))
    .use(metricsRoutes(deps, visibleServerId))
    .use(marketplacesRoutes(deps, visibleServerId))
    .use(renterReportsRoutes(deps, visibleServerId))
    .use(linksRoutes(deps))
    .use(candidatesRoutes(deps))
    .use(offersRoutes(deps))
    .use(bulkRoutes(deps))
    .use(marketRoutes(deps))
    .use(earningsRoutes(deps, (tenantId) => platformCuts(deps, tenantId)))
    .use(costsRoutes(deps))
    .use(strategyRoutes(deps))
    .use(reportsRoutes(deps))
    .use(notificationsRoutes(deps))
    .use(alertsRoutes(deps))
    .use(readinessRoutes(deps))
    .use(prometheusRoutes(deps))
    .use(liveRoutes(deps))
    .use(commandsRoutes(deps))
    .use(watchdogRoutes(deps))
    .use(drainsRoutes(deps))
    .use(reconciliationRoutes(deps))
    .use(plansRoutes(deps))
    .use(billingRoutes(deps))
    .use(paymentsRoutes(deps))
    .use(sandboxRoutes(deps))
    .use(subscriptionRoutes(deps))
    // The gateway's tools are REST requests made in-process through this same app.
    .use(mcpRoutes(deps, (request) => handleInProcess(request)))

  // Outside the chain above: one more link there passes TypeScript's instantiation depth limit.
  app.use(consoleRoutes())
  app.use(listingRoutes(deps))
  app.use(listingProfilesRoutes(deps))
  if (deps.config.testClock) app.use(testingRoutes(deps, runner))
  handleInProcess = (request) => app.handle(request)
  document = openapiDocument(app, { documentation: DOCUMENTATION(deps), exclude: [`${API_PREFIX}/docs`, `${API_PREFIX}/openapi.json`], formRoutes })

  // A switched-off feature's routes do not exist for 405 either: every method answers 404.
  allowedMethods = createMethodIndex(
    app.routes.filter(
      (r) =>
        deps.config.signupEnabled || (r.hooks?.detail as { 'x-gpuhq-access'?: { requires?: string } } | undefined)?.['x-gpuhq-access']?.requires !== 'signup',
    ),
  )
  // Fails closed: a route without an access declaration stops the app here (only the plugin's
  // OpenAPI document is public without one).
  accessIndex = buildAccessIndex(app.routes as never, [`GET ${API_PREFIX}/openapi.json`, `GET ${API_PREFIX}/docs`])
  return app
}

export type App = ReturnType<typeof createApp>
