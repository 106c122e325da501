import { Elysia, t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { actorOf, describe } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { problems } from '../../platform/problem'
import { Literals, Money, Nullable, PageQuery, responses, Timestamp, Uuid } from '../../platform/schemas'
import { BILLING_RANGES } from '../../platform/zoned'
import { chargeDays, chargesCsv, getBilling, ledgerPage } from './billing.service'

const tags = ['billing']
const read = { role: 'viewer', scope: 'billing:read' } as const
const Tile = Type.Object({ spend_usd: Money(), from: Timestamp(), to: Timestamp() })

const Billing = Type.Object({
  balance_usd: Money(),
  account_state: Literals(['active', 'grace', 'frozen']),
  grace_since: Nullable(Timestamp()),
  grace_ends_at: Nullable(Timestamp({ description: 'When the account freezes unless the balance is back to zero or above' })),
  frozen_at: Nullable(Timestamp()),
  tariff: Type.Object({
    plan: Nullable(Type.String()),
    label: Nullable(Type.String()),
    monthly_price_per_server_usd: Nullable(Money()),
    contract_priced: Type.Boolean(),
    servers_max: Nullable(Type.Integer({ description: 'fleet.servers.max; null means unlimited' })),
  }),
  estimate: Type.Object({
    managed_servers: Type.Integer(),
    per_day_usd: Nullable(Money()),
    per_month_usd: Nullable(Money()),
    days_in_month: Type.Integer(),
  }),
  days_left: Nullable(Type.Integer({ description: 'Whole days the balance covers at the current fleet; null when nothing is charged' })),
  timezone: Type.String({ description: "Zone the tiles are computed in (the member's own)" }),
  tiles: Type.Object(
    { today: Tile, yesterday: Tile, '7d': Tile, month: Tile, prev_month: Tile },
    { description: 'Spend per period: minus the sum of charge and adjustment rows; top-ups excluded' },
  ),
})

const LedgerEntry = Type.Object({
  id: Uuid(),
  tenant_id: Uuid(),
  kind: Literals(['charge', 'topup', 'adjustment']),
  amount_usd: Money(),
  balance_after_usd: Money(),
  occurred_at: Timestamp(),
  charge_day: Nullable(Type.String({ format: 'date' })),
  charge_hour: Nullable(Timestamp()),
  detail: Type.String({ maxLength: 512 }),
  calculation_id: Nullable(Uuid()),
  created_at: Timestamp(),
})

export function billingRoutes(deps: Deps) {
  return new Elysia({ name: 'billing', prefix: '/api/v1' })
    .get('/billing', ({ request }) => getBilling({ deps, actor: actorOf(request) }), {
      response: responses({ 200: Billing }, [401, 403]),
      detail: describe(read, { tags, summary: 'Balance, tariff, charge estimate, account state and spend tiles' }),
    })
    .get('/billing/ledger', ({ request, query }) => ledgerPage({ deps, actor: actorOf(request), input: query }), {
      query: t.Object({
        ...PageQuery,
        kind: t.Optional(Literals(['charge', 'topup', 'adjustment'])),
        range: t.Optional(
          Literals(BILLING_RANGES, { description: "Expanded in the member's time zone by the same code as the tiles; exclusive with from/to" }),
        ),
        from: t.Optional(t.String({ maxLength: 64, description: 'RFC 3339; inclusive, on occurred_at' })),
        to: t.Optional(t.String({ maxLength: 64, description: 'RFC 3339; exclusive' })),
      }),
      response: responses({ 200: Type.Object({ items: Type.Array(LedgerEntry, { maxItems: 200 }), next_cursor: Nullable(Type.String()) }) }, [401, 403, 422]),
      detail: describe(read, {
        tags,
        summary: 'Ledger entries, newest first by occurred_at',
        description: 'With `range`, the charge and adjustment rows returned add up to the matching tile of GET /billing.',
      }),
    })
    .get('/billing/charges', ({ request, query }) => chargeDays({ deps, actor: actorOf(request), input: query }), {
      query: t.Object({ ...PageQuery }),
      response: responses(
        {
          200: Type.Object({
            items: Type.Array(
              Type.Object({
                day: Type.String({ format: 'date' }),
                amount_usd: Money(),
                hours: Type.Integer(),
                server_hours: Type.Integer(),
                csv: Type.String(),
              }),
            ),
            next_cursor: Nullable(Type.String()),
          }),
        },
        [401, 403, 422],
      ),
      detail: describe(read, { tags, summary: 'Daily charge journal, one row per UTC day, newest first' }),
    })
    .get(
      '/billing/charges/:day.csv',
      ({ request, params, set }) => {
        set.headers['content-type'] = 'text/csv; charset=utf-8'
        set.headers['content-disposition'] = `attachment; filename="gpuhq-charges-${params.day}.csv"`
        return chargesCsv({ deps, actor: actorOf(request), day: params.day })
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
        response: responses(
          { 200: Type.String({ description: 'text/csv with a header row: day,server_id,server_name,hours,amount_usd' }) },
          [401, 403, 404, 422],
        ),
        detail: describe(read, {
          tags,
          summary: "One UTC day's charges per server, as CSV",
          description: "Each hour's booked amount is split over that hour's servers, so the rows add up exactly to the day's ledger charges.",
        }),
      },
    )
}
