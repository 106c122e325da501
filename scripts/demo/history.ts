import { SimulatedGpus, seededRandom } from '../../agent/lib/simulate'
import { withTransaction } from '../../db/client'
import type { Deps } from '../../src/platform/context'
import { parseTimestamp, US_PER_DAY, US_PER_HOUR } from '../../src/platform/time'
import { accruePast } from '../../src/modules/earnings'
import { backdateEnrolment, fleetRuntime, markFleetDirty, type Sample } from '../../src/modules/fleet'
import { appendEntry } from '../../src/modules/billing'
import { assignPlan, hourStartOf } from '../../src/modules/plans'
import { CLORE_RATES, DEMO_SERVERS, type DemoServer } from './plan'

/**
 * The demo's past week: what a fresh database cannot have made in real time, written through the
 * owning modules' own paths. The servers' enrolments and the tenant's plan are moved back (so the
 * `billing.charge` job, run afterwards, books their hourly charges itself), a week of telemetry
 * goes through the fleet's ingestion as an agent's backlog would (the `metrics.rollup` job then
 * rolls it up), and a week of rentals is accrued by the earnings module's own arithmetic.
 */

const MINUTE_US = 60_000_000
/** Telemetry steps: every 5 minutes for the last two days (the 5-minute graphs), every 30 before (the hourly ones). */
const RECENT_US = 48 * US_PER_HOUR
/** The metrics the graphs show by default (docs/telemetry.md): a week of them, not of every metric. */
const GPU_METRICS = ['temperature_c', 'utilization_pct', 'power_w', 'fan_pct', 'memory_used_mb']
const HOST_METRICS = ['cpu_usage_pct', 'memory_used_pct']

const enrolledAt = (s: DemoServer, nowUs: number) => nowUs - s.enrolledDaysAgo * US_PER_DAY
/** What the owner had on account when the demo's week began (micro-USD): enough for the week's hourly charges. */
const OPENING_BALANCE_MICROS = 20_000_000

/**
 * The balance the owner carried into the demo's week, as one adjustment dated an hour before the
 * first server's enrolment (`nowUs` is the demo's start; the enrolments are moved back from a later
 * moment, so they come after it). The week's hourly charges are then booked against it before
 * today's top-ups (demo.ts), so the ledger, newest first by when each entry occurred, chains: each
 * entry's balance after is the one below it plus its amount.
 */
export async function openingBalance(deps: Deps, tenantId: string, nowUs: number): Promise<void> {
  const first = Math.min(...DEMO_SERVERS.map((s) => enrolledAt(s, nowUs)))
  await withTransaction(deps.db, async (tx) => {
    await appendEntry(tx, deps, {
      tenantId,
      kind: 'adjustment',
      amountMicros: OPENING_BALANCE_MICROS,
      occurredAt: hourStartOf(first) - US_PER_HOUR,
      detail: "Opening balance carried into the demo's week",
    })
  })
}

/**
 * The servers were enrolled days ago, and the tenant has been on `pro` since the first of them: the
 * plan history the charge job prices each hour by. (The plan was ordered through the API, which puts
 * it in force from today on.)
 */
export async function backdateFleet(deps: Deps, tenantId: string, ids: Map<string, string>, nowUs: number): Promise<void> {
  await withTransaction(deps.db, async (tx) => {
    for (const s of DEMO_SERVERS) await backdateEnrolment(tx, ids.get(s.name)!, enrolledAt(s, nowUs))
    await markFleetDirty(tx, tenantId)
    const first = Math.min(...DEMO_SERVERS.map((s) => enrolledAt(s, nowUs)))
    await assignPlan(tx, deps, tenantId, 'free', 'pro', hourStartOf(first))
  })
}

/** A week of each server's GPU and host readings from its enrolment up to now, from simulated cards like its agent's. */
export async function backfillTelemetry(deps: Deps, ids: Map<string, string>, nowUs: number): Promise<number> {
  const runtime = fleetRuntime(deps)
  let written = 0
  for (const s of DEMO_SERVERS) {
    const gpus = new SimulatedGpus(
      s.gpus,
      `history:${s.name}`,
      { model: s.model, memoryMb: s.memoryMb, maxPowerW: s.maxPowerW, hot: s.role === 'hot' },
      seededRandom(s.name),
    )
    const pick = (values: Record<string, number | null>, names: string[]) => Object.fromEntries(names.map((n) => [n, values[n] ?? null]))
    let batch: Sample[] = []
    const end = nowUs - 5 * MINUTE_US
    for (let t = Math.floor(enrolledAt(s, nowUs) / (5 * MINUTE_US)) * 5 * MINUTE_US; t < end; ) {
      batch.push({ t, gpuIndex: -1, values: pick(gpus.hostSample(), HOST_METRICS) })
      for (const [index, values] of gpus.sample()) batch.push({ t, gpuIndex: index, values: pick(values, GPU_METRICS) })
      t += nowUs - t > RECENT_US ? 30 * MINUTE_US : 5 * MINUTE_US
      if (batch.length >= 2000 || t >= end) {
        // The fleet's group commit, as for an agent flushing a backlog; the event loop runs between batches.
        await runtime.telemetry(ids.get(s.name)!, batch)
        await runtime.flush()
        written += batch.length
        batch = []
        await Bun.sleep(0)
      }
    }
  }
  return written
}

type Deal = { kind: string; currency: string; priceDay: string | null; gpuCount: number | null }
const money = (n: number) => n.toFixed(8).replace(/0+$/, '').replace(/\.$/, '')

/** The deals a listed server shows while rented: the plan's renters now, or one renter of half its cards. */
function dealsWhenRented(s: DemoServer): Deal[] {
  const l = s.listing!
  if (l.marketplace === 'marketplace_a') {
    const rented = l.rented.length > 0 ? l.rented : [{ kind: 'on_demand' as const, gpus: Math.ceil(s.gpus / 2) }]
    return rented.map((r) => ({
      kind: r.kind,
      currency: 'USD',
      priceDay: money((r.kind === 'interruptible' ? l.minBidHour : l.priceGpuHour) * 24 * r.gpus),
      gpuCount: r.gpus,
    }))
  }
  const [coin, price] = l.order ? [l.order.currency, l.order.pricePerDay] : Object.entries(l.pricing)[0]!
  return [{ kind: l.order?.spot ? 'spot' : 'on_demand', currency: coin, priceDay: money(price), gpuCount: s.gpus }]
}

/** The deals the simulators hold on a listed server right now (the plan's renters; none when it lists none). */
function dealsNow(s: DemoServer): Deal[] {
  const l = s.listing!
  if (l.marketplace === 'marketplace_a')
    return l.rented.map((r) => ({
      kind: r.kind,
      currency: 'USD',
      priceDay: money((r.kind === 'interruptible' ? l.minBidHour : l.priceGpuHour) * 24 * r.gpus),
      gpuCount: r.gpus,
    }))
  return l.order ? [{ kind: l.order.spot ? 'spot' : 'on_demand', currency: l.order.currency, priceDay: money(l.order.pricePerDay), gpuCount: s.gpus }] : []
}

/** One spell of a server's past: the deals that ran through it (none: idle). */
export type Spell = { fromUs: number; toUs: number; deals: Deal[] }

/**
 * A week of rentals on each linked server up to `untilUs` (now), accrued by the earnings module as
 * its job would have: before the server was linked, rented spells of 6 to 40 hours between idle
 * ones of 1 to 10; from the link on, the renters the simulators hold (the plan's). The links'
 * watermarks are set at `untilUs`, so the earnings.sample job goes on from there. Answers the
 * spells per server name: the platform's own report is made from the same rentals
 * (markets.ts `reportVastEarnings`).
 */
export async function backfillEarnings(
  deps: Deps,
  tenantId: string,
  ids: Map<string, string>,
  linkedAt: Map<string, string>,
  nowUs: number,
  untilUs: number,
): Promise<Map<string, Spell[]>> {
  const rates = Object.fromEntries(Object.entries(CLORE_RATES).map(([coin, usd]) => [coin, String(usd)]))
  const out = new Map<string, Spell[]>()
  for (const s of DEMO_SERVERS.filter((x) => x.listing)) {
    const serverId = ids.get(s.name)!
    const linked = Math.min(untilUs, parseTimestamp(linkedAt.get(serverId) ?? '') ?? untilUs)
    const random = seededRandom(`earnings:${s.name}`)
    const spells: Spell[] = []
    let rented = random() < 0.6
    for (let from = enrolledAt(s, nowUs); from < linked; rented = !rented) {
      const hours = rented ? 6 + random() * 34 : 1 + random() * 9
      const to = Math.min(linked, from + Math.round(hours * US_PER_HOUR))
      spells.push({ fromUs: from, toUs: to, deals: rented ? dealsWhenRented(s) : [] })
      from = to
    }
    if (linked < untilUs) spells.push({ fromUs: linked, toUs: untilUs, deals: dealsNow(s) })
    await accruePast(deps, { tenantId, serverId, marketplace: s.listing!.marketplace, spells, rates, through: true })
    out.set(s.name, spells)
  }
  return out
}
