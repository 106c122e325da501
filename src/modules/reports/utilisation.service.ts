import { mayAccessServer, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { toCsv } from '../../platform/csv'
import { accruedDays } from '../earnings'
import { presenceTransitionsOf, serversOfTenant } from '../fleet'
import { gpuDays } from './gpu-days.service'
import { periodIndexOfDate, periodIndexOfInstant, periodView, rangeView, type Range } from './range'

/**
 * GET /reports/utilisation (docs/reports.md): per server and for the fleet, the time under
 * management, the time online (presence transitions), the time rented (the accrual's accrued time)
 * and the average GPU utilisation (hourly rollups), over UTC days, since the accrual is kept per UTC
 * day and both shares must be of the same days.
 */

type Acc = { trackedUs: number; onlineUs: number; suspectUs: number; rentedUs: number; utilSum: number; utilGpus: number }
const empty = (): Acc => ({ trackedUs: 0, onlineUs: 0, suspectUs: 0, rentedUs: 0, utilSum: 0, utilGpus: 0 })

function add(into: Acc, from: Acc): void {
  into.trackedUs += from.trackedUs
  into.onlineUs += from.onlineUs
  into.suspectUs += from.suspectUs
  into.rentedUs += from.rentedUs
  into.utilSum += from.utilSum
  into.utilGpus += from.utilGpus
}

const round = (x: number, decimals: number) => Math.round(x * 10 ** decimals) / 10 ** decimals

function figures(a: Acc) {
  return {
    tracked_seconds: Math.floor(a.trackedUs / 1_000_000),
    online_seconds: Math.floor(a.onlineUs / 1_000_000),
    suspect_seconds: Math.floor(a.suspectUs / 1_000_000),
    uptime_share: a.trackedUs > 0 ? round(a.onlineUs / a.trackedUs, 4) : null,
    rented_seconds: Math.floor(a.rentedUs / 1_000_000),
    rented_share: a.trackedUs > 0 ? round(Math.min(1, a.rentedUs / a.trackedUs), 4) : null,
    gpu_utilisation_pct: a.utilGpus > 0 ? round(a.utilSum / a.utilGpus, 1) : null,
  }
}

const overlap = (a0: number, a1: number, b0: number, b1: number) => Math.max(0, Math.min(a1, b1) - Math.max(a0, b0))

/** Presence as segments [from, to) covering [start, end): the state the window opens with, then each transition. */
function presenceSegments(transitions: { kind: string; at: number }[], start: number, end: number) {
  const out: { from: number; to: number; state: string }[] = []
  let state = 'offline'
  let at = start
  for (const t of transitions) {
    const next = t.kind.slice('presence.'.length)
    if (t.at > at) {
      out.push({ from: at, to: Math.min(t.at, end), state })
      at = t.at
    }
    state = next
  }
  if (at < end) out.push({ from: at, to: end, state })
  return out
}

export async function utilisationReport({ deps, actor, range }: { deps: Deps; actor: Actor; range: Range }) {
  const now = deps.clock.nowUs()
  const end = Math.min(range.toUs, now)
  const rented = new Map<string, Map<number, number>>()
  for (const row of await accruedDays(deps, actor.tenantId, range.from, range.to)) {
    const i = periodIndexOfDate(range, row.day)
    if (i < 0 || !mayAccessServer(actor, row.serverId)) continue
    const byPeriod = rented.get(row.serverId) ?? new Map<number, number>()
    byPeriod.set(i, (byPeriod.get(i) ?? 0) + row.accruedUs)
    rented.set(row.serverId, byPeriod)
  }
  const servers = (await serversOfTenant(deps.db, actor.tenantId)).filter(
    (s) => mayAccessServer(actor, s.id) && ((s.createdAt < end && (s.decommissionedAt ?? Number.POSITIVE_INFINITY) > range.fromUs) || rented.has(s.id)),
  )
  // A fixed number of reads whatever the servers (docs/reports.md "Cost"): presence transitions of
  // every server at once, GPU utilisation per server and UTC day from the stored daily aggregates.
  const ids = servers.map((s) => s.id)
  const transitions = await presenceTransitionsOf(deps.db, actor.tenantId, ids, range.fromUs, end)
  const utilisation = new Map<string, { day: number; sum: number; gpuHours: number }[]>()
  for (const d of await gpuDays(deps, actor.tenantId, ids, 'utilization_pct', range.fromUs, Math.min(range.toUs, now))) {
    const list = utilisation.get(d.serverId) ?? []
    list.push(d)
    utilisation.set(d.serverId, list)
  }
  const rows = servers.map((s) => {
    const managedFrom = Math.max(s.createdAt, range.fromUs)
    const managedTo = Math.min(s.decommissionedAt ?? Number.POSITIVE_INFINITY, end)
    const segments = managedTo > managedFrom ? presenceSegments(transitions.get(s.id) ?? [], range.fromUs, end) : []
    // Periods and segments are both in time order: one pass over the two (not every segment per period).
    let first = 0
    const periods = range.periods.map((p) => {
      const acc = empty()
      const from = Math.max(p.fromUs, managedFrom)
      const to = Math.min(p.toUs, managedTo)
      acc.trackedUs = Math.max(0, to - from)
      while (first < segments.length && segments[first]!.to <= p.fromUs) first++
      for (let i = first; i < segments.length && segments[i]!.from < p.toUs; i++) {
        const seg = segments[i]!
        if (seg.state === 'online') acc.onlineUs += overlap(seg.from, seg.to, from, to)
        else if (seg.state === 'suspect') acc.suspectUs += overlap(seg.from, seg.to, from, to)
      }
      return acc
    })
    for (const [i, us] of rented.get(s.id) ?? []) periods[i]!.rentedUs += us
    // Periods are whole UTC days here, so a day's GPU-hours land in the period of its first instant.
    for (const d of utilisation.get(s.id) ?? []) {
      const i = periodIndexOfInstant(range, d.day)
      if (i < 0) continue
      periods[i]!.utilSum += d.sum
      periods[i]!.utilGpus += d.gpuHours
    }
    const whole = empty()
    for (const p of periods) add(whole, p)
    return { server: s, periods, whole }
  })

  const fleetPeriods = range.periods.map((_, i) => {
    const acc = empty()
    for (const r of rows) add(acc, r.periods[i]!)
    return acc
  })
  const fleet = empty()
  for (const p of fleetPeriods) add(fleet, p)

  const about = (s: (typeof servers)[number]) => ({ server_id: s.id, name: s.name, gpu_model: s.gpuModel || null })
  return {
    json: () => ({
      report: 'utilisation' as const,
      ...rangeView(range),
      fleet: figures(fleet),
      periods: range.periods.map((p, i) => ({ ...periodView(p), ...figures(fleetPeriods[i]!) })),
      servers: rows.map((r) => ({ ...about(r.server), gpu_count: r.server.gpuCount, ...figures(r.whole) })),
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
          'tracked_seconds',
          'online_seconds',
          'suspect_seconds',
          'uptime_share',
          'rented_seconds',
          'rented_share',
          'gpu_utilisation_pct',
        ],
        range.periods.flatMap((p, i) =>
          rows.map((r) => {
            const f = figures(r.periods[i]!)
            return [
              p.period,
              p.from,
              p.to,
              r.server.id,
              r.server.name,
              r.server.gpuModel,
              f.tracked_seconds,
              f.online_seconds,
              f.suspect_seconds,
              f.uptime_share,
              f.rented_seconds,
              f.rented_share,
              f.gpu_utilisation_pct,
            ]
          }),
        ),
      ),
  }
}
