import { mayAccessServer, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { toCsv } from '../../platform/csv'
import { formatMoney } from '../../platform/money'
import { accruedDays, type AccruedDay } from '../earnings'
import { serversOfTenant } from '../fleet'
import { periodIndexOfDate, periodView, rangeView, type Range } from './range'
import { MARKETPLACES } from '../marketplaces'

/**
 * GET /reports/earnings (docs/reports.md): the earnings accrual rows (one per server, marketplace
 * and UTC day) summed by period, marketplace, GPU model and server, with the platforms' own figure
 * beside them. Every figure is a sum of whole rows, so it matches GET /marketplaces/earnings exactly.
 */

const TOTAL_LABEL = "Estimate from marketplace data: the marketplaces' own numbers and gpuhq's accrual from them, not a ledger"

type Acc = { earned: number; platform: number; platformRows: number; accruedUs: number; gapUs: number; servers: Set<string> }
const empty = (): Acc => ({ earned: 0, platform: 0, platformRows: 0, accruedUs: 0, gapUs: 0, servers: new Set() })

function addRow(a: Acc, r: AccruedDay): void {
  a.earned += r.accruedUsdMicros
  a.accruedUs += r.accruedUs
  a.gapUs += r.gapUs
  if (r.platformUsdMicros !== null) {
    a.platform += r.platformUsdMicros
    a.platformRows++
  }
  a.servers.add(r.serverId)
}

function figures(a: Acc) {
  return {
    earned_usd: formatMoney(a.earned),
    platform_reported_usd: a.platformRows > 0 ? formatMoney(a.platform) : null,
    accrued_seconds: Math.floor(a.accruedUs / 1_000_000),
    accrual_gap_seconds: Math.floor(a.gapUs / 1_000_000),
  }
}

/** Accumulators by key, created on first use. */
class Groups {
  readonly map = new Map<string, Acc>()
  at(key: string): Acc {
    let a = this.map.get(key)
    if (!a) this.map.set(key, (a = empty()))
    return a
  }
}

export async function earningsReport({ deps, actor, range }: { deps: Deps; actor: Actor; range: Range }) {
  const known = new Map((await serversOfTenant(deps.db, actor.tenantId)).map((s) => [s.id, s]))
  const modelOf = (serverId: string) => known.get(serverId)?.gpuModel || 'unknown'
  const total = empty()
  const g = new Groups()
  const periods = range.periods.map(() => ({ all: empty(), byMarket: new Groups(), byModel: new Groups() }))
  for (const r of await accruedDays(deps, actor.tenantId, range.from, range.to)) {
    const i = periodIndexOfDate(range, r.day)
    if (i < 0 || !mayAccessServer(actor, r.serverId)) continue
    const p = periods[i]!
    for (const acc of [
      total,
      g.at(`m|${r.marketplace}`),
      g.at(`g|${modelOf(r.serverId)}`),
      g.at(`s|${r.serverId}`),
      g.at(`c|${i}|${r.serverId}|${r.marketplace}`),
      p.all,
      p.byMarket.at(r.marketplace),
      p.byModel.at(modelOf(r.serverId)),
    ])
      addRow(acc, r)
  }

  const byMarketplace = (groups: (m: string) => Acc) =>
    MARKETPLACES.map((m) => {
      const a = groups(m)
      return { marketplace: m, servers: a.servers.size, ...figures(a) }
    })
  const byModel = (groups: Map<string, Acc>) =>
    [...groups].sort(([a], [b]) => a.localeCompare(b)).map(([gpu_model, a]) => ({ gpu_model, servers: a.servers.size, ...figures(a) }))
  const prefixed = (prefix: string) => new Map([...g.map].filter(([k]) => k.startsWith(prefix)).map(([k, a]) => [k.slice(prefix.length), a]))
  const serverIds = [...prefixed('s|').keys()].sort((a, b) => (known.get(a)?.name ?? '').localeCompare(known.get(b)?.name ?? '') || a.localeCompare(b))

  return {
    json: () => ({
      report: 'earnings' as const,
      ...rangeView(range),
      total: figures(total),
      periods: range.periods.map((p, i) => ({
        ...periodView(p),
        ...figures(periods[i]!.all),
        by_marketplace: byMarketplace((m) => periods[i]!.byMarket.map.get(m) ?? empty()),
        by_gpu_model: byModel(periods[i]!.byModel.map),
      })),
      by_marketplace: byMarketplace((m) => g.map.get(`m|${m}`) ?? empty()),
      by_gpu_model: byModel(prefixed('g|')),
      servers: serverIds.map((id) => ({
        server_id: id,
        name: known.get(id)?.name ?? '',
        gpu_model: known.get(id)?.gpuModel || null,
        ...figures(g.map.get(`s|${id}`)!),
      })),
      total_label: TOTAL_LABEL,
    }),
    csv: () =>
      toCsv(
        [
          'period',
          'period_from',
          'period_to',
          'server_id',
          'server_name',
          'gpu_model',
          'marketplace',
          'earned_usd',
          'platform_reported_usd',
          'accrued_seconds',
          'accrual_gap_seconds',
        ],
        range.periods.flatMap((p, i) =>
          serverIds.flatMap((id) =>
            MARKETPLACES.flatMap((m) => {
              const a = g.map.get(`c|${i}|${id}|${m}`)
              if (!a) return []
              const f = figures(a)
              return [
                [
                  p.period,
                  p.from,
                  p.to,
                  id,
                  known.get(id)?.name ?? '',
                  known.get(id)?.gpuModel ?? '',
                  m,
                  f.earned_usd,
                  f.platform_reported_usd,
                  f.accrued_seconds,
                  f.accrual_gap_seconds,
                ],
              ]
            }),
          ),
        ),
      ),
  }
}
