import { mayAccessServer, permits, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { formatMoney } from '../../platform/money'
import { utcDay } from '../../platform/time'
import { balanceRunway } from '../billing'
import { accruedDays } from '../earnings'
import { exposedServers, LATEST_SLICE, latestGpuMetricsOf, pcieLinkDegraded, rentalSources, serverNames, xidCountsOfTenant } from '../fleet'
import { escapeLabelValue, type Exposition, formatSecondsOfUs, labelSet, streamExposition } from './exposition'
import { BALANCE, EARNINGS, GPU_HEALTH, GPU_INVENTORY, GPU_READINGS, PRESENCE, RENTALS, type FamilySpec } from './prometheus.catalogue'

/**
 * GET /metrics/prometheus (docs/prometheus.md): the caller's fleet as Prometheus metrics. Each
 * family shows only to the scope guarding it (permits: the access check's own rule, as for a GET
 * route declaring that scope), and every per-server series only for servers the caller may see
 * (mayAccessServer: a token's allowlist).
 *
 * A scrape is a handful of reads, whatever the fleet's size: the tenant's managed servers, their
 * latest GPU readings (LATEST_SLICE servers a read), the Xid counts, today's earnings rows and the
 * balance; no query per server. Every read is done before the answer starts, so a failing one
 * (a busy database) is still a problem document; then the body is written in chunks of a few
 * milliseconds each, giving the event loop back between them (streamExposition): a 2,000-server
 * × 8-GPU fleet is 150,000 lines, 20 MB.
 */

type Server = Awaited<ReturnType<typeof exposedServers>>[number]
/** Latest readings of one server: GPU index → value by GPU_READINGS slot (undefined: never reported). */
type Readings = Map<number, (number | null | undefined)[]>
type Runway = Awaited<ReturnType<typeof balanceRunway>>

const yieldLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

export async function scrapeMetrics({ deps, actor }: { deps: Deps; actor: Actor }): Promise<ReadableStream<Uint8Array>> {
  const fleet = permits(actor, 'servers:read', null)
  const markets = permits(actor, 'marketplaces:read', null)
  const servers = fleet || markets ? (await exposedServers(deps.db, actor.tenantId)).filter((s) => mayAccessServer(actor, s.id)) : []
  const readings = fleet ? await readingsOf(deps, servers) : new Map<string, Readings>()
  const xids = fleet ? await xidCountsOfTenant(deps.db, actor.tenantId) : []
  const earnings = markets ? await earningsOf(deps, actor, servers) : null
  const runway = permits(actor, 'billing:read', null) ? await balanceRunway(deps, actor.tenantId) : null
  return streamExposition(function* (out) {
    const serverLabels = new Map(servers.map((s) => [s.id, [['server', s.id] as const, ['name', s.name] as const]]))
    if (fleet) {
      yield* writePresence(out, servers, serverLabels)
      yield* writeGpus(out, servers, serverLabels, readings)
      yield* writeXids(out, xids, servers, serverLabels)
    }
    if (markets) {
      yield* writeRentals(out, servers, serverLabels)
      writeEarnings(out, earnings!, serverLabels)
    }
    if (runway) writeBalance(out, runway)
  })
}

type Pairs = readonly (readonly [string, string])[]

function start(out: Exposition, f: FamilySpec): void {
  out.family(f.name, f.type, f.help)
}

function* writePresence(out: Exposition, servers: Server[], labels: Map<string, Pairs>): Generator<void> {
  start(out, PRESENCE.online)
  for (const s of servers) out.sample(PRESENCE.online.name, labelSet(labels.get(s.id)!), s.presence === 'online' ? '1' : '0')
  yield
  start(out, PRESENCE.lastSeen)
  for (const s of servers) if (s.lastSeenAt !== null) out.sample(PRESENCE.lastSeen.name, labelSet(labels.get(s.id)!), formatSecondsOfUs(s.lastSeenAt))
  yield
}

/** Slot of each reading in a GPU's values, by the agent's metric name. */
const SLOT = new Map(GPU_READINGS.map((r, i) => [r.metric, i]))

/** The latest readings of the servers shown, LATEST_SLICE servers a read, the event loop free between reads. */
async function readingsOf(deps: Deps, servers: Server[]): Promise<Map<string, Readings>> {
  const byServer = new Map<string, Readings>()
  for (let i = 0; i < servers.length; i += LATEST_SLICE) {
    if (i > 0) await yieldLoop()
    const rows = await latestGpuMetricsOf(
      deps.db,
      servers.slice(i, i + LATEST_SLICE).map((s) => s.id),
    )
    // A server's rows come together (its key's prefix): look it up once per run of rows.
    let serverId = ''
    let gpus: Readings = new Map()
    for (const [id, gpuIndex, metric, value] of rows) {
      const slot = SLOT.get(metric)
      if (slot === undefined) continue
      if (id !== serverId) {
        serverId = id
        const known = byServer.get(id)
        if (known) gpus = known
        else byServer.set(id, (gpus = new Map()))
      }
      let values = gpus.get(gpuIndex)
      if (!values) gpus.set(gpuIndex, (values = []))
      values[slot] = value
    }
  }
  return byServer
}

/** Servers written between two steps of the body's generator (a step: well under a millisecond). */
const STEP = 32

/** At most this many GPUs per server, as in the fleet rows. */
const MAX_GPUS = 128

function* writeGpus(out: Exposition, servers: Server[], labels: Map<string, Pairs>, readings: Map<string, Readings>): Generator<void> {
  // Per server: its GPUs (the inventory and any GPU that reported), each with its label text and readings.
  // A GPU's label text is its server's (`{server="…",name="…"`, written once) and its own pairs:
  // labelSet([...server, ['gpu', i], ['model', model]]), without building the pairs per GPU.
  const models = new Map<string, string>()
  const model = (m: string) => {
    let escaped = models.get(m)
    if (escaped === undefined) models.set(m, (escaped = escapeLabelValue(m)))
    return escaped
  }
  const gpus: { server: Server; gpus: { index: number; memoryMb: number | null; labels: string; values: (number | null | undefined)[] | undefined }[] }[] = []
  for (const s of servers) {
    const reported: Readings = readings.get(s.id) ?? new Map()
    const indexes: number[] = []
    for (const g of s.gpus) if (!indexes.includes(g.index)) indexes.push(g.index)
    for (const i of reported.keys()) if (!indexes.includes(i)) indexes.push(i)
    indexes.sort((a, b) => a - b)
    if (indexes.length > MAX_GPUS) indexes.length = MAX_GPUS
    const head = labelSet(labels.get(s.id)!).slice(0, -1)
    gpus.push({
      server: s,
      gpus: indexes.map((i) => {
        const inventory = s.gpus.find((g) => g.index === i)
        return {
          index: i,
          memoryMb: inventory?.memory_mb ?? null,
          labels: `${head},gpu="${i}",model="${model(inventory?.model ?? s.gpuModel)}"}`,
          values: reported.get(i),
        }
      }),
    })
    if (gpus.length % STEP === 0) yield
  }
  yield
  let step = 0
  for (let slot = 0; slot < GPU_READINGS.length; slot++) {
    const reading = GPU_READINGS[slot]!
    start(out, reading)
    for (const { server, gpus: list } of gpus) {
      if (server.presence === 'offline') continue
      for (const g of list) {
        const v = g.values?.[slot]
        if (typeof v === 'number' && Number.isFinite(v)) out.sample(reading.name, g.labels, reading.value(v))
      }
      if (++step % STEP === 0) yield
    }
  }
  const total = GPU_INVENTORY.memoryTotal
  start(out, total)
  for (const { gpus: list } of gpus) {
    for (const g of list) if (typeof g.memoryMb === 'number') out.sample(total.name, g.labels, total.value(g.memoryMb))
    if (++step % STEP === 0) yield
  }
  // The link verdict, by fleet's own rule, from the inventory's maxima and the latest readings.
  const degraded = GPU_HEALTH.pcieDegraded
  start(out, degraded)
  const LINK = ['pcie_link_gen', 'pcie_link_width', 'utilization_pct'] as const
  for (const { server, gpus: list } of gpus) {
    if (server.presence === 'offline') continue
    for (const g of list) {
      const readings = new Map(LINK.map((m) => [m, numberOrNull(g.values?.[SLOT.get(m)!])]))
      const verdict = pcieLinkDegraded(
        server.gpus.find((x) => x.index === g.index),
        readings,
      )
      if (verdict !== null) out.sample(degraded.name, g.labels, verdict ? '1' : '0')
    }
    if (++step % STEP === 0) yield
  }
}

const numberOrNull = (v: number | null | undefined) => (typeof v === 'number' && Number.isFinite(v) ? v : null)

/** Xid counts per server, GPU and Xid number (fleet keeps them as the agents' gpu.xid events arrive). */
function* writeXids(out: Exposition, xids: Awaited<ReturnType<typeof xidCountsOfTenant>>, servers: Server[], labels: Map<string, Pairs>): Generator<void> {
  start(out, GPU_HEALTH.xids)
  const byId = new Map(servers.map((s) => [s.id, s]))
  for (const x of xids) {
    const server = byId.get(x.serverId)
    if (!server) continue
    const model = server.gpus.find((g) => g.index === x.gpuIndex)?.model ?? server.gpuModel
    const gpu: Pairs =
      x.gpuIndex >= 0
        ? [
            ['gpu', String(x.gpuIndex)],
            ['model', model],
          ]
        : []
    out.sample(GPU_HEALTH.xids.name, labelSet([...labels.get(server.id)!, ...gpu, ['xid', String(x.xid)]]), String(x.count))
  }
  yield
}

function* writeRentals(out: Exposition, servers: Server[], labels: Map<string, Pairs>): Generator<void> {
  const sources = new Map(servers.map((s) => [s.id, rentalSources(s)]))
  start(out, RENTALS.rented)
  for (const s of servers) out.sample(RENTALS.rented.name, labelSet(labels.get(s.id)!), sources.get(s.id)!.length ? '1' : '0')
  yield
  start(out, RENTALS.running)
  for (const s of servers)
    for (const source of sources.get(s.id)!) out.sample(RENTALS.running.name, labelSet([...labels.get(s.id)!, ['marketplace', source]]), '1')
  yield
}

type Earnings = { rows: Awaited<ReturnType<typeof accruedDays>>; others: Map<string, string> }

/** Today's accrued earnings of the servers the caller may see, sorted, with the names of servers no longer managed. */
async function earningsOf(deps: Deps, actor: Actor, servers: Server[]): Promise<Earnings> {
  const today = utcDay(deps.clock.nowUs())
  const rows = (await accruedDays(deps, actor.tenantId, today, today)).filter((r) => mayAccessServer(actor, r.serverId))
  rows.sort((a, b) => a.serverId.localeCompare(b.serverId) || a.marketplace.localeCompare(b.marketplace))
  // A server decommissioned today still earned today: its name comes from the full list.
  const shown = new Set(servers.map((s) => s.id))
  const others = rows.some((r) => !shown.has(r.serverId)) ? await serverNames(deps.db, actor.tenantId) : new Map<string, string>()
  return { rows, others }
}

function writeEarnings(out: Exposition, { rows, others }: Earnings, labels: Map<string, Pairs>): void {
  start(out, EARNINGS.accruedToday)
  for (const r of rows) {
    const server = labels.get(r.serverId) ?? [
      ['server', r.serverId],
      ['name', others.get(r.serverId) ?? ''],
    ]
    out.sample(EARNINGS.accruedToday.name, labelSet([...server, ['marketplace', r.marketplace]]), formatMoney(r.accruedUsdMicros))
  }
}

function writeBalance(out: Exposition, runway: Runway): void {
  start(out, BALANCE.balance)
  out.sample(BALANCE.balance.name, '', formatMoney(runway.balanceMicros))
  start(out, BALANCE.timeLeft)
  if (runway.secondsLeft !== null) out.sample(BALANCE.timeLeft.name, '', String(runway.secondsLeft))
}
