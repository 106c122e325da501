import { type Static, type TObject, Type } from '@sinclair/typebox'
import type { Scope } from '../../platform/access'
import { formatTimestamp, parseTimestamp } from '../../platform/time'
import { fitMetrics } from './fit'
import { describedMarketplaceId, MARKETPLACES } from '../marketplaces'

/**
 * The AI-assistant tool catalogue (docs/ai-access.md "Tools"). Each tool is one REST operation of
 * the public API: the gateway turns a call into that request, made in-process on behalf of the
 * assistant's actor, so it passes the same validation, access check (role, scope, plan, account
 * state, server allowlist), rate limits and audit as any API client. A tool never reaches a
 * service function by another road. Its input schema is checked first; its answer is bounded.
 */

export const GROUPS = [
  { key: 'fleet', description: 'Servers: presence, latest vitals, configuration, events, the dashboard' },
  { key: 'metrics', description: "A server's metric series over a time range" },
  { key: 'commands', description: 'Send typed commands to agents and follow them' },
  { key: 'billing', description: 'Balance, charges and the ledger' },
  { key: 'earnings', description: "What the machines earn on the marketplaces, and the fleet's margin" },
  { key: 'marketplaces', description: 'Links to marketplace machines and their offers' },
  { key: 'strategy', description: 'Price suggestions of the pricing policies, and accepting one' },
  { key: 'alerts', description: 'Incidents: what is wrong now, and what was' },
] as const

type GroupKey = (typeof GROUPS)[number]['key']

type Request = { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; path: string; query?: Record<string, unknown>; body?: unknown }

/** What a tool's request may depend on besides its arguments: the service clock's now (microseconds). */
type ToolContext = { nowUs: number }

/**
 * How a tool's answer is cut to fit the output limit: the answer as parsed, the character budget;
 * the answer to send (valid JSON, under the budget, saying in `truncated` what was left out), or
 * null when nothing sensible fits. Tools without one get `fitByLargestList` (src/modules/mcp/fit.ts).
 */
type Fit = (answer: Record<string, unknown>, budget: number, args: Record<string, unknown>) => Record<string, unknown> | null

export type Tool<S extends TObject = TObject> = {
  name: string
  title: string
  group: GroupKey
  mode: 'read' | 'write'
  /** The scope of the REST operation it stands for (a test checks it against the route's declaration). */
  scope: Scope
  description: string
  input: S
  request: (args: Static<S>, ctx: ToolContext) => Request
  /** How the answer is cut to fit the output limit (default: the largest list is shortened). */
  fit?: Fit
}

const Uuid = (description: string) => Type.String({ format: 'uuid', description })
const Limit = Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 20, description: 'At most this many items (1-50, default 20)' }))
const Cursor = Type.Optional(Type.String({ maxLength: 1024, description: 'next_cursor of the previous page' }))
const Marketplace = describedMarketplaceId(MARKETPLACES.join(' or '))
const Days = Type.Optional(Type.Integer({ minimum: 1, maximum: 90, description: 'Days back, today included (1-90, default 7)' }))
const seg = (v: string) => encodeURIComponent(v)

/** The metric names the agent reports (agent/README.md), which GET /servers/{id}/metrics accepts. */
const GPU_METRICS = [
  'temperature_c',
  'hotspot_temperature_c',
  'memory_temperature_c',
  'utilization_pct',
  'memory_used_mb',
  'power_w',
  'fan_pct',
  'clock_sm_mhz',
] as const
const HOST_METRICS = ['cpu_usage_pct', 'memory_used_pct', 'disk_used_pct', 'net_rx_mbps', 'net_tx_mbps'] as const
const METRIC_DEFAULT = ['temperature_c', 'utilization_pct', 'power_w']
const HOURS_DEFAULT = 6
/** The statistics of a metrics point; metrics.query sends only those asked for. */
const STATS = ['min', 'max', 'avg', 'p50', 'p95', 'last'] as const

function tool<S extends TObject>(t: Tool<S>): Tool {
  return t as unknown as Tool
}

export const TOOLS: readonly Tool[] = [
  tool({
    name: 'fleet.list_servers',
    title: 'List servers',
    group: 'fleet',
    scope: 'servers:read',
    mode: 'read',
    description: 'Servers of the fleet with presence, latest GPU vitals and rental state (GET /api/v1/servers). Filters are optional.',
    input: Type.Object(
      {
        presence: Type.Optional(Type.Union([Type.Literal('online'), Type.Literal('suspect'), Type.Literal('offline')])),
        q: Type.Optional(Type.String({ maxLength: 128, description: 'Substring of the name or hostname' })),
        group_id: Type.Optional(Uuid('Only servers of this group')),
        tag: Type.Optional(Type.String({ maxLength: 128, description: 'Exact tag key or key:value' })),
        limit: Limit,
        cursor: Cursor,
      },
      { additionalProperties: false },
    ),
    request: (a) => ({ method: 'GET', path: '/servers', query: { ...a, limit: a.limit ?? 20 } }),
  }),
  tool({
    name: 'fleet.get_server',
    title: 'One server',
    group: 'fleet',
    scope: 'servers:read',
    mode: 'read',
    description: 'A server in full: presence, hardware, latest vitals per GPU, maintenance, rentals, margin (GET /api/v1/servers/{id}).',
    input: Type.Object({ server_id: Uuid('The server') }, { additionalProperties: false }),
    request: (a) => ({ method: 'GET', path: `/servers/${seg(a.server_id)}` }),
  }),
  tool({
    name: 'fleet.server_events',
    title: "A server's events",
    group: 'fleet',
    scope: 'servers:read',
    mode: 'read',
    description: 'Typed events of a server, newest first: presence transitions, agent reports, maintenance, rentals (GET /api/v1/servers/{id}/events).',
    input: Type.Object(
      { server_id: Uuid('The server'), kind: Type.Optional(Type.String({ maxLength: 64, description: 'Only this event kind' })), limit: Limit, cursor: Cursor },
      { additionalProperties: false },
    ),
    request: (a) => ({ method: 'GET', path: `/servers/${seg(a.server_id)}/events`, query: { kind: a.kind, cursor: a.cursor, limit: a.limit ?? 20 } }),
  }),
  tool({
    name: 'fleet.dashboard',
    title: 'Fleet dashboard',
    group: 'fleet',
    scope: 'servers:read',
    mode: 'read',
    description: 'The fleet at a glance: servers by presence, GPUs, rentals (GET /api/v1/dashboard).',
    input: Type.Object({}, { additionalProperties: false }),
    request: () => ({ method: 'GET', path: '/dashboard' }),
  }),
  tool({
    name: 'metrics.query',
    title: "A server's metrics",
    group: 'metrics',
    scope: 'servers:read',
    mode: 'read',
    description: `Metric series of one server, newest data last (GET /api/v1/servers/{id}/metrics). Bounded: a few metrics (default ${METRIC_DEFAULT.join(', ')}), one GPU or all, the last \`hours\` (default ${HOURS_DEFAULT}) or from/to, resolution 5m or 1h, and only the statistics asked for (default avg and max). GPU metrics: ${GPU_METRICS.join(', ')}; host metrics: ${HOST_METRICS.join(', ')}. An answer too large for one reply keeps the newest points and says in \`truncated\` what was left out.`,
    input: Type.Object(
      {
        server_id: Uuid('The server'),
        metrics: Type.Optional(
          Type.Array(Type.Union([...GPU_METRICS, ...HOST_METRICS].map((m) => Type.Literal(m))), {
            minItems: 1,
            maxItems: 6,
            uniqueItems: true,
            description: `Metric names (default ${METRIC_DEFAULT.join(', ')})`,
          }),
        ),
        gpu_index: Type.Optional(Type.Integer({ minimum: 0, maximum: 127, description: 'Only this GPU (host metrics are unaffected); default every GPU' })),
        hours: Type.Optional(
          Type.Integer({
            minimum: 1,
            maximum: 720,
            description: `The range: this many hours up to \`to\` (default ${HOURS_DEFAULT}); ignored when \`from\` is given`,
          }),
        ),
        from: Type.Optional(Type.String({ maxLength: 40, description: 'Start (RFC 3339, inclusive)' })),
        to: Type.Optional(Type.String({ maxLength: 40, description: 'End (RFC 3339, exclusive); default now' })),
        resolution: Type.Optional(
          Type.Union([Type.Literal('5m'), Type.Literal('1h')], { description: 'Bucket size: 5m, or 1h (the default for ranges over 48 hours)' }),
        ),
        stats: Type.Optional(
          Type.Array(Type.Union(STATS.map((m) => Type.Literal(m))), {
            minItems: 1,
            maxItems: STATS.length,
            uniqueItems: true,
            description: 'Statistics per point (default avg, max)',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    request: (a, ctx) => {
      // The range is the operation's own from/to; `hours` back from `to` (a malformed `to` is left for the operation to refuse).
      const toUs = a.to === undefined ? ctx.nowUs : parseTimestamp(a.to)
      const to = a.to ?? formatTimestamp(ctx.nowUs)
      const from = a.from ?? (toUs === null ? undefined : formatTimestamp(toUs - (a.hours ?? HOURS_DEFAULT) * 3_600_000_000))
      return {
        method: 'GET',
        path: `/servers/${seg(a.server_id)}/metrics`,
        query: { metric: a.metrics ?? METRIC_DEFAULT, from, to, resolution: a.resolution, gpu_index: a.gpu_index },
      }
    },
    fit: fitMetrics,
  }),
  tool({
    name: 'commands.send',
    title: 'Send a command',
    group: 'commands',
    scope: 'commands:write',
    mode: 'write',
    description: 'Sends a typed command to the agent of a server (POST /api/v1/commands); follow it with commands.get.',
    input: Type.Object(
      {
        server_id: Uuid('The server'),
        type: Type.String({ minLength: 1, maxLength: 64, description: 'Command type, e.g. reboot, restart_agent, set_power_limit' }),
        params: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: "The type's parameters" })),
        requires: Type.Optional(Type.String({ maxLength: 32, description: 'A precondition, e.g. no_rental' })),
        deadline: Type.Optional(Type.String({ maxLength: 40, description: 'RFC 3339' })),
      },
      { additionalProperties: false },
    ),
    request: (a) => ({ method: 'POST', path: '/commands', body: { ...a, params: a.params ?? {} } }),
  }),
  tool({
    name: 'commands.get',
    title: 'Follow a command',
    group: 'commands',
    scope: 'commands:read',
    mode: 'read',
    description: 'A command with its delivery and execution status, timeline and result (GET /api/v1/commands/{id}).',
    input: Type.Object({ command_id: Uuid('The command') }, { additionalProperties: false }),
    request: (a) => ({ method: 'GET', path: `/commands/${seg(a.command_id)}` }),
  }),
  tool({
    name: 'commands.list',
    title: 'Recent commands',
    group: 'commands',
    scope: 'commands:read',
    mode: 'read',
    description: 'Commands, newest first, optionally of one server (GET /api/v1/commands).',
    input: Type.Object({ server_id: Type.Optional(Uuid('Only this server')), limit: Limit, cursor: Cursor }, { additionalProperties: false }),
    request: (a) => ({ method: 'GET', path: '/commands', query: { ...a, limit: a.limit ?? 20 } }),
  }),
  tool({
    name: 'billing.balance',
    title: 'Balance and charges',
    group: 'billing',
    scope: 'billing:read',
    mode: 'read',
    description: "The prepaid balance, today's and this month's charges, and how long the balance lasts (GET /api/v1/billing).",
    input: Type.Object({}, { additionalProperties: false }),
    request: () => ({ method: 'GET', path: '/billing' }),
  }),
  tool({
    name: 'billing.ledger',
    title: 'Ledger entries',
    group: 'billing',
    scope: 'billing:read',
    mode: 'read',
    description: 'Ledger entries (charges, top-ups, adjustments), newest first (GET /api/v1/billing/ledger).',
    input: Type.Object(
      {
        range: Type.Optional(Type.String({ maxLength: 16, description: 'today, yesterday, 7d, month or prev_month' })),
        kind: Type.Optional(Type.String({ maxLength: 32, description: 'Only this kind, e.g. charge or topup' })),
        limit: Limit,
        cursor: Cursor,
      },
      { additionalProperties: false },
    ),
    request: (a) => ({ method: 'GET', path: '/billing/ledger', query: { ...a, limit: a.limit ?? 20 } }),
  }),
  tool({
    name: 'earnings.summary',
    title: 'Marketplace earnings',
    group: 'earnings',
    scope: 'marketplaces:read',
    mode: 'read',
    description: "What the machines earned per day and marketplace, in the marketplaces' own numbers (GET /api/v1/marketplaces/earnings).",
    input: Type.Object({ days: Days }, { additionalProperties: false }),
    request: (a) => ({ method: 'GET', path: '/marketplaces/earnings', query: a }),
  }),
  tool({
    name: 'earnings.margin',
    title: 'Margin',
    group: 'earnings',
    scope: 'billing:read',
    mode: 'read',
    description: 'Earnings against electricity, commission and gpuhq charges, per server (GET /api/v1/reports/margin).',
    input: Type.Object({ days: Days }, { additionalProperties: false }),
    request: (a) => ({ method: 'GET', path: '/reports/margin', query: a }),
  }),
  tool({
    name: 'marketplaces.list_links',
    title: 'Links and offers',
    group: 'marketplaces',
    scope: 'marketplaces:read',
    mode: 'read',
    description: 'Every server-to-machine link with what the marketplace shows: listing, offer prices, rentals (GET /api/v1/marketplaces/links).',
    input: Type.Object({}, { additionalProperties: false }),
    request: () => ({ method: 'GET', path: '/marketplaces/links' }),
  }),
  tool({
    name: 'marketplaces.set_offer',
    title: 'Publish or change an offer',
    group: 'marketplaces',
    scope: 'marketplaces:write',
    mode: 'write',
    description:
      'Publishes or changes the offer of a linked machine (PUT /api/v1/marketplaces/links/{server_id}/{marketplace}/offer); `offer` uses the remote projection names, e.g. {"price_gpu_hour": "0.45"}.',
    input: Type.Object(
      { server_id: Uuid('The server'), marketplace: Marketplace, offer: Type.Record(Type.String(), Type.Unknown(), { description: 'The offer body' }) },
      { additionalProperties: false },
    ),
    request: (a) => ({ method: 'PUT', path: `/marketplaces/links/${seg(a.server_id)}/${a.marketplace}/offer`, body: a.offer }),
  }),
  tool({
    name: 'marketplaces.withdraw_offer',
    title: 'Withdraw an offer',
    group: 'marketplaces',
    scope: 'marketplaces:write',
    mode: 'write',
    description: 'Unlists the machine on the marketplace (DELETE /api/v1/marketplaces/links/{server_id}/{marketplace}/offer).',
    input: Type.Object({ server_id: Uuid('The server'), marketplace: Marketplace }, { additionalProperties: false }),
    request: (a) => ({ method: 'DELETE', path: `/marketplaces/links/${seg(a.server_id)}/${a.marketplace}/offer` }),
  }),
  tool({
    name: 'strategy.suggestions',
    title: 'Price suggestions',
    group: 'strategy',
    scope: 'strategy:read',
    mode: 'read',
    description:
      'What the pricing policies would set for each offer now, why (market percentile, cost floor, ceiling) and the expected change in daily earnings, newest first (GET /api/v1/strategy/suggestions). Plans pro and enterprise.',
    input: Type.Object(
      {
        state: Type.Optional(
          Type.Union([Type.Literal('pending'), Type.Literal('accepted'), Type.Literal('dismissed'), Type.Literal('superseded')], {
            description: 'Only suggestions in this state (pending: not decided yet)',
          }),
        ),
        server_id: Type.Optional(Uuid('Only this server')),
        limit: Limit,
        cursor: Cursor,
      },
      { additionalProperties: false },
    ),
    request: (a) => ({ method: 'GET', path: '/strategy/suggestions', query: a }),
  }),
  tool({
    name: 'strategy.accept_suggestion',
    title: 'Accept a price suggestion',
    group: 'strategy',
    scope: 'strategy:write',
    mode: 'write',
    description:
      "Publishes the suggestion's price on its marketplace, once (POST /api/v1/strategy/suggestions/{id}/accept); a decided or superseded suggestion is refused.",
    input: Type.Object({ suggestion_id: Uuid('The suggestion') }, { additionalProperties: false }),
    request: (a) => ({ method: 'POST', path: `/strategy/suggestions/${seg(a.suggestion_id)}/accept` }),
  }),
  tool({
    name: 'alerts.list',
    title: 'Alert incidents',
    group: 'alerts',
    scope: 'notifications:read',
    mode: 'read',
    description:
      'Incidents (offline, temperature, agent errors, marketplace errors, stale links, low balance), newest first, with when they opened, were acknowledged and resolved (GET /api/v1/alerts).',
    input: Type.Object(
      {
        state: Type.Optional(
          Type.Union([Type.Literal('unresolved'), Type.Literal('open'), Type.Literal('acknowledged'), Type.Literal('resolved')], {
            description: 'unresolved: open or acknowledged',
          }),
        ),
        server_id: Type.Optional(Uuid('Only this server')),
        limit: Limit,
        cursor: Cursor,
      },
      { additionalProperties: false },
    ),
    request: (a) => ({ method: 'GET', path: '/alerts', query: a }),
  }),
]

export const TOOL_NAMES: readonly string[] = TOOLS.map((t) => t.name)
export const READ_TOOLS: readonly string[] = TOOLS.filter((t) => t.mode === 'read').map((t) => t.name)
export const toolNamed = (name: string): Tool | undefined => TOOLS.find((t) => t.name === name)
