import { Elysia } from 'elysia'
import { actorOf, describe, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { enforceExpensiveReadLimit } from '../../platform/rate-limit'
import { responses } from '../../platform/schemas'
import { formatOf, reportCache, serveReport, type Format, type Rendered } from './delivery'
import { earningsReport } from './earnings.service'
import { marginReportOf } from './margin.service'
import type { Range, RangeInput } from './range'
import { EarningsReport, MarginQuery, MarginReport, ReportQuery, SpendReport, UtilisationReport } from './reports.model'
import { reportRequest, type ReportName } from './reports.service'
import { spendReport } from './spend.service'
import { utilisationReport } from './utilisation.service'

const tags = ['reports']
const ERRORS = [304, 401, 403, 422, 429]
const COMMON =
  ' Range: `from`/`to` dates, both included, at most 366 days (default the last 7 days, today included); `group_by` day, week or month. `format=csv` (or `Accept: text/csv`) answers CSV. Cached 60 s per tenant, allowlist and range: strong ETag, If-None-Match → 304, `Cache-Control: private, max-age=60`. A range the rules refuse → 422 (`after_to`, `range_too_large`, `format`). An answer computed anew (not from the cache) is an expensive read: it counts once for the caller (RATE_LIMIT_EXPENSIVE_READS_PER_MINUTE, default 20 a minute per token or member, in bursts of at most 5) and once for the tenant (RATE_LIMIT_TENANT_EXPENSIVE_READS_PER_MINUTE, default 40, bursts of 10); past either, 429 with Retry-After. See docs/reports.md.'

/**
 * GET /reports/{report}: one route per report, so each declares its own access and answer schema
 * in the OpenAPI document; an unknown report is an unknown route (404 not_found). The answer cache
 * belongs to this app (one per routes factory), keyed per tenant and server allowlist.
 */
export function reportsRoutes(deps: Deps) {
  const cache = reportCache(deps.clock)
  /** Resolves the range, then serves the report from the cache or builds it with `verb`. */
  function answer<T extends object>(
    request: Request,
    set: { headers: Record<string, string | number> },
    report: ReportName,
    query: RangeInput & { format?: Format },
    verb: (o: { deps: Deps; actor: Actor; range: Range }) => Rendered<T> | Promise<Rendered<T>>,
  ): Promise<T> | Promise<Response> {
    const actor = actorOf(request)
    const { range, key, filename } = reportRequest({ deps, actor, report, input: query })
    const format = formatOf(query.format, request.headers.get('accept'))
    // Elysia's handler type wants a promise of one or the other; at run time either may come.
    return serveReport({
      request,
      set,
      cache,
      clock: deps.clock,
      key,
      format,
      filename,
      admit: () => enforceExpensiveReadLimit(deps, actor),
      build: () => verb({ deps, actor, range: range() }),
    }) as Promise<T> | Promise<Response>
  }

  return new Elysia({ name: 'reports', prefix: '/api/v1' })
    .get('/reports/utilisation', ({ request, set, query }) => answer(request, set, 'utilisation', query, utilisationReport), {
      query: ReportQuery,
      response: responses({ 200: UtilisationReport }, ERRORS),
      detail: describe(
        { role: 'viewer', scope: 'servers:read' },
        {
          tags,
          summary: 'Uptime, rented time and GPU utilisation of the fleet and each server',
          description:
            "Over UTC days (the accrual's days): time under management, online and suspect (presence transitions), rented (the accrual's accrued time) and average GPU utilisation (hourly rollups), for the fleet per period and each server over the range (per period in the CSV). A token sees its allowlisted servers only." +
            COMMON,
        },
      ),
    })
    .get('/reports/earnings', ({ request, set, query }) => answer(request, set, 'earnings', query, earningsReport), {
      query: ReportQuery,
      response: responses({ 200: EarningsReport }, ERRORS),
      detail: describe(
        { role: 'viewer', scope: 'marketplaces:read' },
        {
          tags,
          summary: 'Earnings by period, marketplace, GPU model and server',
          description:
            "Sums of the earnings accrual rows (one per server, marketplace and UTC day, so the days are UTC): earned before the platforms' cut, beside the platforms' own figure after it where they report one. Marketplace numbers, not a ledger: totals carry `total_label`. A token sees its allowlisted servers only." +
            COMMON,
        },
      ),
    })
    .get('/reports/spend', ({ request, set, query }) => answer(request, set, 'spend', query, spendReport), {
      query: ReportQuery,
      response: responses({ 200: SpendReport }, ERRORS),
      detail: describe(
        { role: 'viewer', scope: 'billing:read' },
        {
          tags,
          summary: "gpuhq's charges, adjustments and top-ups by period, and charges per server",
          description:
            "Sums of the ledger rows whose occurred_at falls in each period of the account's own days (the caller's time zone, else the owner's, else UTC), as the spend tiles of GET /billing count them; charges split per server as the per-server CSV splits them." +
            COMMON,
        },
      ),
    })
    .get('/reports/margin', ({ request, set, query }) => answer(request, set, 'margin', query, marginReportOf), {
      query: MarginQuery,
      response: responses({ 200: MarginReport }, ERRORS),
      detail: describe(
        { role: 'viewer', scope: 'billing:read' },
        {
          tags,
          summary: 'Margin of the fleet, each server and each GPU model, by period',
          description:
            "Beyond the spec. Over UTC days: earnings accrued from running deals, minus the platforms' cut, minus electricity, minus gpuhq's own charges. A figure with a missing input (no tariff, no power measurements, no commission, a sync outage) leaves it out, says `estimate: true` and names it in `missing`; it is never shown as zero. `days` (1..90) asks for the last days, today included, instead of `from`/`to`." +
            COMMON,
        },
      ),
    })
}
