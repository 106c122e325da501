import type { Static } from '@sinclair/typebox'
import { t } from 'elysia'
import { actorOf, describe, ensureReaches, permits, type Actor, type Scope } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { enforceExpensiveReadLimit } from '../../platform/rate-limit'
import { ProblemError, problems } from '../../platform/problem'
import { alsoServed, Literals, responses } from '../../platform/schemas'
import { formatOf, reportCache, serveReport, type Rendered } from './delivery'
import { earningsReport } from './earnings.service'
import { marginReportOf } from './margin.service'
import type { Range } from './range'
import { invalidReportQuery } from './reports.errors'
import { EarningsReport, MarginQuery, MarginReport, SpendReport, UtilisationReport } from './reports.model'
import { reportRequest, type ReportName } from './reports.service'
import { spendReport } from './spend.service'
import { utilisationReport } from './utilisation.service'

const tags = ['reports']
const ERRORS = [304, 401, 403, 404, 422, 429]

type Verb = (o: { deps: Deps; actor: Actor; range: Range }) => Rendered<object> | Promise<Rendered<object>>

/**
 * The reports behind GET /reports/{report} (docs/reports.md), each with the scope a token needs to
 * read it (the area its figures come from) and what it reaches: `server` reports are cut to a
 * token's allowlisted servers, `tenant` ones (billing's figures) refuse such a token
 * (docs/access.md "What an operation reaches").
 */
const REPORTS: Record<ReportName, { scope: Scope; reach: 'server' | 'tenant'; verb: Verb }> = {
  utilisation: { scope: 'servers:read', reach: 'server', verb: utilisationReport },
  earnings: { scope: 'marketplaces:read', reach: 'server', verb: earningsReport },
  spend: { scope: 'billing:read', reach: 'tenant', verb: spendReport },
  margin: { scope: 'billing:read', reach: 'tenant', verb: marginReportOf },
}
const NAMES = Object.keys(REPORTS) as ReportName[]
const ReportAnswer = t.Union(
  [UtilisationReport, EarningsReport, SpendReport, MarginReport],
  alsoServed({ 'text/csv': 'The report as CSV (RFC 4180, a header row; the finest grain of the report): `format=csv`, or Accept preferring text/csv' }),
)
const isReport = (name: string | undefined): name is ReportName => name !== undefined && Object.hasOwn(REPORTS, name)

/**
 * GET /reports/{report}: one operation (decisions.md), its `report` an enum in the OpenAPI
 * document, its answer the report's own schema (each says which it is in `report`). The route's
 * declaration admits a token holding any report's scope; the report named is then held to its own
 * (403 like any missing scope), and an unknown report is no such resource (404 not_found), both
 * before the query is validated. The answer cache belongs to this app (one per routes factory),
 * keyed per tenant and server allowlist.
 */
export function reportsRoutes(deps: Deps) {
  const cache = reportCache(deps.clock)
  return apiRoutes('reports', deps).get(
    '/reports/:report',
    async ({ verb, request, set, query, params }) => {
      const report = params.report
      // `days` is the margin report's own way to give a range (docs/reports.md).
      if (query.days !== undefined && report !== 'margin')
        throw invalidReportQuery('/days', 'not_allowed', 'days is taken by the margin report only; give from and to')
      const { actor } = verb
      const { range, key, filename } = await reportRequest({ deps, actor, report, input: query })
      const format = formatOf(query.format, request.headers.get('accept'))
      // Elysia's handler type wants one answer type; at run time a report or a Response may come.
      return (await serveReport({
        request,
        set,
        cache,
        clock: deps.clock,
        key,
        format,
        filename,
        admit: () => enforceExpensiveReadLimit(deps, actor),
        build: () => REPORTS[report].verb({ deps, actor, range: range() }),
      })) as Static<typeof ReportAnswer>
    },
    {
      // A transform runs before validation, so before the verb context is resolved: it reads the actor itself.
      transform: ({ request, params }) => {
        const name = (params as { report?: string }).report
        if (!isReport(name)) throw problems.notFound(`no report ${name}; the reports are ${NAMES.join(', ')}`)
        const { scope, reach } = REPORTS[name]
        const actor = actorOf(request)
        if (!permits(actor, scope, null)) throw new ProblemError('forbidden', { detail: `the ${name} report needs the ${scope} scope` })
        if (reach === 'tenant') ensureReaches(actor, null, `the ${name} report`)
      },
      params: t.Object({ report: Literals(NAMES as ['utilisation', 'earnings', 'spend', 'margin'], { description: 'Which report' }) }),
      query: MarginQuery,
      response: responses({ 200: ReportAnswer }, ERRORS),
      detail: {
        ...describe(
          { role: 'viewer', anyScope: [...new Set(NAMES.map((n) => REPORTS[n].scope))], reach: 'server' },
          {
            tags,
            summary: 'An analytical report over a range of days: utilisation, earnings, spend or margin',
            description: [
              "`utilisation` (a token needs `servers:read`): over UTC days (the accrual's days), time under management, online and suspect (presence transitions), rented (the accrual's accrued time) and average GPU utilisation (hourly rollups), for the fleet per period and each server over the range (per period in the CSV).",
              "`earnings` (`marketplaces:read`): sums of the earnings accrual rows (one per server, marketplace and UTC day, so the days are UTC): earned before the platforms' cut, beside the platforms' own figure after it where they report one. Marketplace numbers, not a ledger: totals carry `total_label`.",
              "`spend` (`billing:read`): sums of the ledger rows whose occurred_at falls in each period of the account's own days (the caller's time zone, else the owner's, else UTC), as the spend tiles of GET /billing count them; charges split per server as the per-server CSV splits them.",
              "`margin` (`billing:read`): over UTC days, earnings accrued from running deals, minus the platforms' cut, minus electricity, minus gpuhq's own charges. A figure with a missing input (no tariff, no power measurements, no commission, a sync outage) leaves it out, says `estimate: true` and names it in `missing`; it is never shown as zero. `days` (1..90, margin only) asks for the last days, today included, instead of `from`/`to`.",
              "`utilisation` and `earnings` show a token with a server_allowlist its servers only; `spend` and `margin` span the tenant and refuse such a token (403 forbidden, errors[0].code tenant_wide). A token without the report's scope → 403; an unknown report → 404. Range: `from`/`to` dates, both included, at most 366 days (default the last 7 days, today included); `group_by` day, week or month. `format=csv` (or `Accept: text/csv`) answers CSV (text/csv). Cached 60 s per tenant, allowlist and range: strong ETag, If-None-Match → 304, `Cache-Control: private, max-age=60`. A range the rules refuse → 422 (`after_to`, `range_too_large`, `format`). An answer computed anew (not from the cache) is an expensive read: it counts once for the caller (RATE_LIMIT_EXPENSIVE_READS_PER_MINUTE, default 20 a minute per token or member, in bursts of at most 5) and once for the tenant (RATE_LIMIT_TENANT_EXPENSIVE_READS_PER_MINUTE, default 40, bursts of 10); past either, 429 with Retry-After. See docs/reports.md.",
            ].join('\n\n'),
          },
        ),
        // The scope each report needs, for a client (and the MCP tool catalogue) to read: the
        // declaration above admits any of them, the transform holds each report to its own.
        'x-gpuhq-scope-by-parameter': { report: Object.fromEntries(NAMES.map((n) => [n, REPORTS[n].scope])) },
      },
    },
  )
}
