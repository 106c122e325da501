import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { toCsv } from '../../platform/csv'
import { formatMoney } from '../../platform/money'
import { entriesForReport } from '../billing'
import { serverNames } from '../fleet'
import { periodIndexOfInstant, periodView, rangeView, type Range } from './range'

/**
 * GET /reports/spend (docs/reports.md): the ledger summed by period of the account's own days
 * (a row counts on the local day its occurred_at falls in, like the spend tiles of GET /billing):
 * gpuhq's charges (split per server as the per-server CSV splits them), operator adjustments and
 * top-ups. Every figure is a sum of whole ledger rows, to the micro-dollar.
 */

type Acc = { charges: number; adjustments: number; topups: number; chargedHours: number; serverHours: number }
const empty = (): Acc => ({ charges: 0, adjustments: 0, topups: 0, chargedHours: 0, serverHours: 0 })

function figures(a: Acc) {
  return {
    charges_usd: formatMoney(a.charges),
    adjustments_usd: formatMoney(a.adjustments),
    spend_usd: formatMoney(a.charges + a.adjustments),
    topups_usd: formatMoney(a.topups),
    charged_hours: a.chargedHours,
    server_hours: a.serverHours,
  }
}

export async function spendReport({ deps, actor, range }: { deps: Deps; actor: Actor; range: Range }) {
  const total = empty()
  const periods = range.periods.map(() => ({
    acc: empty(),
    adjustmentsBooked: null as number | null,
    topupsBooked: null as number | null,
    servers: new Map<string, { hours: number; micros: number }>(),
  }))
  const servers = new Map<string, { hours: number; micros: number }>()
  for (const e of await entriesForReport(deps.db, actor.tenantId, range.fromUs, range.toUs)) {
    const i = periodIndexOfInstant(range, e.occurredAt)
    if (i < 0) continue
    const p = periods[i]!
    if (e.kind === 'charge') {
      p.acc.charges -= e.amountMicros
      p.acc.chargedHours++
      p.acc.serverHours += e.servers.length
      for (const [id, booked] of e.servers)
        for (const into of [servers, p.servers]) {
          const s = into.get(id) ?? { hours: 0, micros: 0 }
          s.hours++
          s.micros -= booked
          into.set(id, s)
        }
    } else if (e.kind === 'adjustment') {
      p.acc.adjustments -= e.amountMicros
      p.adjustmentsBooked = (p.adjustmentsBooked ?? 0) + e.amountMicros
    } else {
      p.acc.topups += e.amountMicros
      p.topupsBooked = (p.topupsBooked ?? 0) + e.amountMicros
    }
  }
  for (const p of periods) {
    total.charges += p.acc.charges
    total.adjustments += p.acc.adjustments
    total.topups += p.acc.topups
    total.chargedHours += p.acc.chargedHours
    total.serverHours += p.acc.serverHours
  }
  const names = await serverNames(deps.db, actor.tenantId)
  const byName = (ids: Iterable<string>) => [...ids].sort((a, b) => (names.get(a) ?? '').localeCompare(names.get(b) ?? '') || a.localeCompare(b))

  return {
    json: () => ({
      report: 'spend' as const,
      ...rangeView(range),
      total: figures(total),
      periods: range.periods.map((p, i) => ({ ...periodView(p), ...figures(periods[i]!.acc) })),
      servers: byName(servers.keys()).map((id) => {
        const s = servers.get(id)!
        return { server_id: id, name: names.get(id) ?? '', server_hours: s.hours, charges_usd: formatMoney(s.micros) }
      }),
    }),
    // One row per period and server charged, then the period's adjustments and top-ups, each amount
    // as the ledger books it (charges negative, credits positive): the rows sum to the balance's change.
    csv: () =>
      toCsv(
        ['period', 'period_from', 'period_to', 'kind', 'server_id', 'server_name', 'server_hours', 'ledger_amount_usd'],
        range.periods.flatMap((p, i) => {
          const mine = periods[i]!
          const head = [p.period, p.from, p.to]
          return [
            ...byName(mine.servers.keys()).map((id) => {
              const s = mine.servers.get(id)!
              return [...head, 'charge', id, names.get(id) ?? '', s.hours, formatMoney(-s.micros)]
            }),
            ...(mine.adjustmentsBooked !== null ? [[...head, 'adjustment', null, null, null, formatMoney(mine.adjustmentsBooked)]] : []),
            ...(mine.topupsBooked !== null ? [[...head, 'topup', null, null, null, formatMoney(mine.topupsBooked)]] : []),
          ]
        }),
      ),
  }
}
