import { t } from 'elysia'
import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { problems } from '../../platform/problem'
import { PageOf, responses, Served } from '../../platform/schemas'
import { Billing, ChargeDay, ChargeDaysQuery, LedgerEntry, LedgerQuery } from './billing.model'
import { chargeDays, chargesCsv, getBilling, ledgerPage } from './billing.service'

const tags = ['billing']
const read = { role: 'viewer', scope: 'billing:read', reach: 'tenant' } as const

export function billingRoutes(deps: Deps) {
  return apiRoutes('billing', deps)
    .get('/billing', ({ verb }) => getBilling(verb), {
      response: responses({ 200: Billing }, [401, 403]),
      detail: describe(read, { tags, summary: 'Balance, tariff, charge estimate, account state and spend tiles' }),
    })
    .get('/billing/ledger', ({ verb, query }) => ledgerPage({ ...verb, input: query }), {
      query: LedgerQuery,
      response: responses({ 200: PageOf(LedgerEntry, { maxItems: 200 }) }, [401, 403, 422]),
      detail: describe(read, {
        tags,
        summary: 'Ledger entries, newest first by occurred_at',
        description: 'With `range`, the charge and adjustment rows returned add up to the matching tile of GET /billing.',
      }),
    })
    .get('/billing/charges', ({ verb, query }) => chargeDays({ ...verb, input: query }), {
      query: ChargeDaysQuery,
      response: responses({ 200: PageOf(ChargeDay) }, [401, 403, 422]),
      detail: describe(read, { tags, summary: 'Daily charge journal, one row per UTC day, newest first' }),
    })
    .get(
      '/billing/charges/:day.csv',
      ({ verb, params, set }) => {
        set.headers['content-type'] = 'text/csv; charset=utf-8'
        set.headers['content-disposition'] = `attachment; filename="gpuhq-charges-${params.day}.csv"`
        return chargesCsv({ ...verb, day: params.day })
      },
      {
        // The router names the parameter "day.csv"; the wire form is {day}.csv.
        transform: ({ params }) => {
          const p = params as Record<string, string>
          const raw = p['day.csv']
          if (raw !== undefined) {
            if (!raw.endsWith('.csv')) throw problems.notFound('no such route')
            p.day = raw.slice(0, -4)
            delete p['day.csv']
          }
        },
        params: t.Object({ day: t.String({ format: 'date', description: 'UTC day, YYYY-MM-DD' }) }),
        response: responses({ 200: Served('text/csv', 'CSV with a header row: day,server_id,server_name,hours,amount_usd') }, [401, 403, 404, 422]),
        detail: describe(read, {
          tags,
          summary: "One UTC day's charges per server, as CSV",
          description: "Each hour's booked amount is split over that hour's servers, so the rows add up exactly to the day's ledger charges.",
        }),
      },
    )
}
