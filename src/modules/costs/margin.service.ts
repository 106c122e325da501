import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { formatMoney } from '../../platform/money'
import { parseDay, utcDay } from '../../platform/time'
import { chargesPerServerDay } from '../billing'
import { accruedDays } from '../earnings'
import { managedServers, serverOfTenant, type ServerMargin, type ServerSummary } from '../fleet'
import { gpuMetricByServerDay, type GpuDay } from '../telemetry'
import { costBasisOf, cutPercent } from './costs.service'

/**
 * The margin of every GPU-hour (docs/earnings.md "Margin"), beyond the spec: per server and UTC day,
 * what the deals accrued (before the platform's cut) minus the platform's cut (the commission
 * entered, else the published default), minus electricity (the server's tariff, else the fleet's,
 * × measured GPU power × hours), minus gpuhq's own hourly charges. A figure with a missing input is
 * computed without it and labelled an estimate, with what is missing named; a cost with no input at
 * all is null, never shown as zero.
 */

const DAY_US = 86_400_000_000
const HOUR_US = 3_600_000_000

type Figures = Omit<ServerMargin, 'days' | 'from_day' | 'to_day'>

/** `cutKnown`/`electricityKnown`: something could be computed for that cost; when not (and the cost applies), it is shown null, not zero. */
type Acc = {
  earned: number
  cut: number
  electricity: number
  charges: number
  missing: Set<string>
  cutKnown: boolean
  cutNeeded: boolean
  electricityKnown: boolean
}
const empty = (): Acc => ({ earned: 0, cut: 0, electricity: 0, charges: 0, missing: new Set(), cutKnown: false, cutNeeded: false, electricityKnown: false })

function view(a: Acc): Figures {
  const m = (n: number) => formatMoney(Math.round(n))
  return {
    earned_usd: m(a.earned),
    platform_cut_usd: a.cutNeeded && !a.cutKnown ? null : m(a.cut),
    electricity_usd: a.electricityKnown ? m(a.electricity) : null,
    gpuhq_charges_usd: m(a.charges),
    // From the rounded parts, so the figures shown add up to the micro-dollar.
    margin_usd: m(Math.round(a.earned) - Math.round(a.cut) - Math.round(a.electricity) - Math.round(a.charges)),
    estimate: a.missing.size > 0,
    missing: [...a.missing].sort(),
  }
}

function add(into: Acc, from: Acc): void {
  into.earned += from.earned
  into.cut += from.cut
  into.electricity += from.electricity
  into.charges += from.charges
  into.cutKnown ||= from.cutKnown
  into.cutNeeded ||= from.cutNeeded
  into.electricityKnown ||= from.electricityKnown
  for (const m of from.missing) into.missing.add(m)
}

/** The UTC days [fromDay, toDay] of the last `days` days, today included. */
function lastDays(deps: Deps, days: number): { fromDay: string; toDay: string } {
  const now = deps.clock.nowUs()
  return { fromDay: utcDay(Math.floor(now / DAY_US) * DAY_US - (days - 1) * DAY_US), toDay: utcDay(now) }
}

/**
 * The margin of each of the given servers over the UTC days [fromDay, toDay], up to now, over the
 * whole range and over each of `periods` (runs of whole days inside it). The cost does not grow with
 * server-days in queries: one read each of the cost basis, the accrual rows, the charges and the
 * measured GPU power (per server and day, telemetry's gpuMetricByServerDay), whatever the number of
 * servers, days and periods; the rest is arithmetic over those rows. The whole range is summed day
 * by day in the same order as each period, so a period's figures are exactly what a range of its
 * days alone would answer.
 */
async function marginsOf(
  deps: Deps,
  tenantId: string,
  servers: readonly ServerSummary[],
  fromDay: string,
  toDay: string,
  periods: readonly { to: string }[] = [],
  power?: readonly GpuDay[],
) {
  const now = deps.clock.nowUs()
  const firstDayUs = parseDay(fromDay)!
  const endUs = Math.min(parseDay(toDay)! + DAY_US, now)
  const basis = await costBasisOf(deps, tenantId)
  const ids = servers.map((s) => s.id)
  const charges = await chargesPerServerDay(deps.db, tenantId, firstDayUs, endUs)
  const watts = new Map<string, number>()
  for (const d of power ?? (await gpuMetricByServerDay(deps.db, ids, 'power_w', firstDayUs, endUs)))
    if (d.buckets > 0) watts.set(`${d.serverId}|${d.day}`, d.sum / d.buckets)
  // Each day of the range once: its date and the index of its period (periods are in order and cover the range).
  const days: { us: number; end: number; date: string; period: number }[] = []
  for (let day = firstDayUs, p = 0; day < endUs; day += DAY_US) {
    const date = utcDay(day)
    while (p < periods.length && date > periods[p]!.to) p++
    days.push({ us: day, end: Math.min(day + DAY_US, endUs), date, period: p < periods.length ? p : -1 })
  }
  const periodByDate = new Map(days.map((d) => [d.date, d.period]))
  const periodOf = (date: string) => (periods.length === 0 ? -1 : (periodByDate.get(date) ?? periods.findIndex((p) => date <= p.to)))
  const whole = new Map<string, Acc>()
  const perPeriod = new Map<string, Acc[]>()
  for (const s of servers) {
    whole.set(s.id, empty())
    perPeriod.set(
      s.id,
      periods.map(() => empty()),
    )
  }
  const into = (serverId: string, day: string): Acc[] => {
    const all = whole.get(serverId)
    if (!all) return []
    const p = periodOf(day)
    return p < 0 ? [all] : [all, perPeriod.get(serverId)![p]!]
  }
  for (const row of await accruedDays(deps, tenantId, fromDay, toDay)) {
    for (const acc of into(row.serverId, row.day)) {
      acc.earned += row.accruedUsdMicros
      if (row.gapUs > 0) acc.missing.add('sync silent past its cap: accrual understated')
      for (const [currency, usd] of Object.entries(row.byCurrencyUsdMicros)) {
        const cut = cutPercent(basis, row.marketplace, currency)
        acc.cutNeeded = true
        if (cut.percent === null) acc.missing.add(`commission ${row.marketplace} ${currency}`)
        else {
          acc.cutKnown = true
          acc.cut += (usd * Number(cut.percent)) / 100
          if (cut.estimated) acc.missing.add(`commission ${row.marketplace} ${currency} (published default used)`)
        }
      }
    }
  }
  for (const server of servers) {
    const tariff = server.electricityMicrosPerKwh ?? basis.electricityMicrosPerKwh
    const byDay = charges.get(server.id)
    for (const { us: day, end, date, period } of days) {
      const w = watts.get(`${server.id}|${day}`) ?? null
      const all = whole.get(server.id)!
      for (const acc of period < 0 ? [all] : [all, perPeriod.get(server.id)![period]!]) {
        if (tariff === null) acc.missing.add('electricity tariff')
        else if (w === null) acc.missing.add('power measurements')
        else {
          acc.electricityKnown = true
          acc.electricity += (tariff * (w / 1000) * (end - day)) / HOUR_US
        }
        acc.charges += byDay?.get(date) ?? 0
      }
    }
  }
  return { margins: whole, perPeriod }
}

/** The fleet, each server and each GPU model, from the servers' accumulators. */
function reportOf(servers: readonly ServerSummary[], margins: Map<string, Acc>) {
  const fleet = empty()
  const byModel = new Map<string, { servers: number; acc: Acc }>()
  for (const s of servers) {
    const acc = margins.get(s.id)!
    add(fleet, acc)
    const model = s.gpuModel || 'unknown'
    const entry = byModel.get(model) ?? { servers: 0, acc: empty() }
    entry.servers++
    add(entry.acc, acc)
    byModel.set(model, entry)
  }
  return {
    fleet: view(fleet),
    servers: servers.map((s) => ({ server_id: s.id, name: s.name, gpu_model: s.gpuModel || null, ...view(margins.get(s.id)!) })),
    gpu_models: [...byModel].sort(([a], [b]) => a.localeCompare(b)).map(([gpu_model, e]) => ({ gpu_model, servers: e.servers, ...view(e.acc) })),
  }
}

/**
 * GET /reports/margin (served by the reports module): the fleet, each managed server, and each GPU
 * model over the UTC days [fromDay, toDay] (the days not begun yet count nothing), and the same for
 * each of `periods` (consecutive runs of days covering the range, in order), from one set of reads.
 * `power`: the measured GPU power per server and UTC day over the range, as telemetry's
 * gpuMetricByServerDay gives it (the reports keep it as stored daily aggregates); without it, read here.
 */
export async function marginReport({
  deps,
  actor,
  fromDay,
  toDay,
  periods = [],
  power,
}: {
  deps: Deps
  actor: Actor
  fromDay: string
  toDay: string
  periods?: readonly { to: string }[]
  power?: readonly GpuDay[]
}) {
  const servers = await managedServers(deps.db, actor.tenantId)
  const { margins, perPeriod } = await marginsOf(deps, actor.tenantId, servers, fromDay, toDay, periods, power)
  return {
    days: Math.round((parseDay(toDay)! - parseDay(fromDay)!) / DAY_US) + 1,
    from_day: fromDay,
    to_day: toDay,
    ...reportOf(servers, margins),
    /** Each period's figures, built when asked for: the fleet's alone (JSON), or every server's too (CSV). */
    periods: periods.map((_, i) => ({
      fleet: () => {
        const fleet = empty()
        for (const s of servers) add(fleet, perPeriod.get(s.id)![i]!)
        return view(fleet)
      },
      all: () => reportOf(servers, new Map(servers.map((s) => [s.id, perPeriod.get(s.id)![i]!]))),
    })),
  }
}

/** The last 7 days' margin of one server (GET /servers/{id}). */
export async function serverMargin(deps: Deps, tenantId: string, serverId: string): Promise<ServerMargin> {
  const { fromDay, toDay } = lastDays(deps, 7)
  const server = await serverOfTenant(deps.db, tenantId, serverId)
  const { margins } = await marginsOf(deps, tenantId, server ? [server] : [], fromDay, toDay)
  return { days: 7, from_day: fromDay, to_day: toDay, ...view(margins.get(serverId) ?? empty()) }
}
