import { mayAccessServer, permits, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { formatMoney } from '../../platform/money'
import { utcDay } from '../../platform/time'
import { balanceRunway } from '../billing'
import { accruedDays } from '../earnings'
import { exposedServers, latestGpuMetricsOfTenant, pcieLinkDegraded, rentalSources, serverNames, xidCountsOfTenant } from '../fleet'
import { Exposition, formatSecondsOfUs, labelSet } from './exposition'
import { BALANCE, EARNINGS, GPU_HEALTH, GPU_INVENTORY, GPU_READINGS, PRESENCE, RENTALS, type FamilySpec } from './prometheus.catalogue'

/**
 * GET /metrics/prometheus (docs/prometheus.md): the caller's fleet as Prometheus metrics. Each
 * family shows only to the scope guarding it (permits: the access check's own rule, as for a GET
 * route declaring that scope), and every per-server series only for servers the caller may see
 * (mayAccessServer: a token's allowlist).
 *
 * A scrape is a handful of reads, whatever the fleet's size: the tenant's managed servers, their
 * latest GPU readings, today's earnings rows and the balance; no query per server.
 */

type Server = Awaited<ReturnType<typeof exposedServers>>[number]
/** Latest readings of one server: GPU index → value by GPU_READINGS slot (undefined: never reported). */
type Readings = Map<number, (number | null | undefined)[]>

export async function scrapeMetrics({ deps, actor }: { deps: Deps; actor: Actor }): Promise<string> {
  const out = new Exposition()
  const fleet = permits(actor, 'servers:read', null)
  const markets = permits(actor, 'marketplaces:read', null)
  const servers = fleet || markets ? (await exposedServers(deps.db, actor.tenantId)).filter((s) => mayAccessServer(actor, s.id)) : []
  const serverLabels = new Map(servers.map((s) => [s.id, [['server', s.id] as const, ['name', s.name] as const]]))
  if (fleet) {
    writePresence(out, servers, serverLabels)
    writeGpus(out, servers, serverLabels, await readingsOf(deps, actor.tenantId))
    await writeXids(out, deps, actor, servers, serverLabels)
  }
  if (markets) {
    writeRentals(out, servers, serverLabels)
    await writeEarnings(out, deps, actor, serverLabels)
  }
  if (permits(actor, 'billing:read', null)) await writeBalance(out, deps, actor.tenantId)
  return out.text()
}

type Pairs = readonly (readonly [string, string])[]

function start(out: Exposition, f: FamilySpec): void {
  out.family(f.name, f.type, f.help)
}

function writePresence(out: Exposition, servers: Server[], labels: Map<string, Pairs>): void {
  start(out, PRESENCE.online)
  for (const s of servers) out.sample(PRESENCE.online.name, labelSet(labels.get(s.id)!), s.presence === 'online' ? '1' : '0')
  start(out, PRESENCE.lastSeen)
  for (const s of servers) if (s.lastSeenAt !== null) out.sample(PRESENCE.lastSeen.name, labelSet(labels.get(s.id)!), formatSecondsOfUs(s.lastSeenAt))
}

/** Slot of each reading in a GPU's values, by the agent's metric name. */
const SLOT = new Map(GPU_READINGS.map((r, i) => [r.metric, i]))

async function readingsOf(deps: Deps, tenantId: string): Promise<Map<string, Readings>> {
  const byServer = new Map<string, Readings>()
  for (const [serverId, gpuIndex, metric, value] of await latestGpuMetricsOfTenant(deps.db, tenantId)) {
    const slot = SLOT.get(metric)
    if (slot === undefined) continue
    let gpus = byServer.get(serverId)
    if (!gpus) byServer.set(serverId, (gpus = new Map()))
    let values = gpus.get(gpuIndex)
    if (!values) gpus.set(gpuIndex, (values = []))
    values[slot] = value
  }
  return byServer
}

/** At most this many GPUs per server, as in the fleet rows. */
const MAX_GPUS = 128

function writeGpus(out: Exposition, servers: Server[], labels: Map<string, Pairs>, readings: Map<string, Readings>): void {
  // Per server: its GPUs (the inventory and any GPU that reported), each with its label text.
  const gpus = servers.map((s) => {
    const reported: Readings = readings.get(s.id) ?? new Map()
    const indexes = [...new Set([...s.gpus.map((g) => g.index), ...reported.keys()])].sort((a, b) => a - b).slice(0, MAX_GPUS)
    return {
      server: s,
      reported,
      gpus: indexes.map((i) => {
        const inventory = s.gpus.find((g) => g.index === i)
        return {
          index: i,
          memoryMb: inventory?.memory_mb ?? null,
          labels: labelSet([...labels.get(s.id)!, ['gpu', String(i)], ['model', inventory?.model ?? s.gpuModel]]),
        }
      }),
    }
  })
  GPU_READINGS.forEach((reading, slot) => {
    start(out, reading)
    for (const { server, reported, gpus: list } of gpus) {
      if (server.presence === 'offline') continue
      for (const g of list) {
        const v = reported.get(g.index)?.[slot]
        if (typeof v === 'number' && Number.isFinite(v)) out.sample(reading.name, g.labels, reading.value(v))
      }
    }
  })
  const total = GPU_INVENTORY.memoryTotal
  start(out, total)
  for (const { gpus: list } of gpus) for (const g of list) if (typeof g.memoryMb === 'number') out.sample(total.name, g.labels, total.value(g.memoryMb))
  // The link verdict, by fleet's own rule, from the inventory's maxima and the latest readings.
  const degraded = GPU_HEALTH.pcieDegraded
  start(out, degraded)
  const LINK = ['pcie_link_gen', 'pcie_link_width', 'utilization_pct'] as const
  for (const { server, reported, gpus: list } of gpus) {
    if (server.presence === 'offline') continue
    for (const g of list) {
      const values = reported.get(g.index)
      const readings = new Map(LINK.map((m) => [m, numberOrNull(values?.[SLOT.get(m)!])]))
      const verdict = pcieLinkDegraded(
        server.gpus.find((x) => x.index === g.index),
        readings,
      )
      if (verdict !== null) out.sample(degraded.name, g.labels, verdict ? '1' : '0')
    }
  }
}

const numberOrNull = (v: number | null | undefined) => (typeof v === 'number' && Number.isFinite(v) ? v : null)

/** Xid counts per server, GPU and Xid number (fleet keeps them as the agents' gpu.xid events arrive). */
async function writeXids(out: Exposition, deps: Deps, actor: Actor, servers: Server[], labels: Map<string, Pairs>): Promise<void> {
  start(out, GPU_HEALTH.xids)
  const byId = new Map(servers.map((s) => [s.id, s]))
  for (const x of await xidCountsOfTenant(deps.db, actor.tenantId)) {
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
}

function writeRentals(out: Exposition, servers: Server[], labels: Map<string, Pairs>): void {
  const sources = new Map(servers.map((s) => [s.id, rentalSources(s)]))
  start(out, RENTALS.rented)
  for (const s of servers) out.sample(RENTALS.rented.name, labelSet(labels.get(s.id)!), sources.get(s.id)!.length ? '1' : '0')
  start(out, RENTALS.running)
  for (const s of servers)
    for (const source of sources.get(s.id)!) out.sample(RENTALS.running.name, labelSet([...labels.get(s.id)!, ['marketplace', source]]), '1')
}

async function writeEarnings(out: Exposition, deps: Deps, actor: Actor, labels: Map<string, Pairs>): Promise<void> {
  start(out, EARNINGS.accruedToday)
  const today = utcDay(deps.clock.nowUs())
  const rows = (await accruedDays(deps, actor.tenantId, today, today)).filter((r) => mayAccessServer(actor, r.serverId))
  // A server decommissioned today still earned today: its name comes from the full list.
  const others = rows.some((r) => !labels.has(r.serverId)) ? await serverNames(deps.db, actor.tenantId) : new Map<string, string>()
  rows.sort((a, b) => a.serverId.localeCompare(b.serverId) || a.marketplace.localeCompare(b.marketplace))
  for (const r of rows) {
    const server = labels.get(r.serverId) ?? [
      ['server', r.serverId],
      ['name', others.get(r.serverId) ?? ''],
    ]
    out.sample(EARNINGS.accruedToday.name, labelSet([...server, ['marketplace', r.marketplace]]), formatMoney(r.accruedUsdMicros))
  }
}

async function writeBalance(out: Exposition, deps: Deps, tenantId: string): Promise<void> {
  const runway = await balanceRunway(deps, tenantId)
  start(out, BALANCE.balance)
  out.sample(BALANCE.balance.name, '', formatMoney(runway.balanceMicros))
  start(out, BALANCE.timeLeft)
  if (runway.secondsLeft !== null) out.sample(BALANCE.timeLeft.name, '', String(runway.secondsLeft))
}
