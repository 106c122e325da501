import { createHash } from 'node:crypto'
import { withTransaction, type DbOrTx } from '../../../db/client'
import { mayAccessServer, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import type { TenantWalk } from '../../platform/jobs'
import { MARKETPLACES, type MarketplaceId } from '../../platform/marketplace-id'
import { formatTimestamp } from '../../platform/time'
import { latestMetricsOf, loadServer, managedServers, recordServerEvent, xidCountsOfServer, xidCountsOfTenant, type ServerSummary } from '../fleet'
import { linkedMachines, type LinkedMachine } from '../marketplaces'
import { plausibleReading } from '../telemetry'
import { listTenants } from '../tenants'
import { checkReadiness, type Item, overall } from './checks'
import { type ReadinessStateRow, saveState, statesOfServer, statesOfTenant } from './readiness.repository'

/**
 * Readiness per server and marketplace (docs/readiness.md): the check list of checks.ts over the
 * agent's facts and each link's platform view, answered by GET /servers/{id}/readiness and GET
 * /readiness; and the evaluation the `readiness.evaluate` job runs, which remembers each item's
 * last known verdict and the verified driver baseline, and records an item that passed and now fails
 * as a `readiness.regressed` server event (a notification in `error` and an alert incident react to
 * it), and one that fails and now passes as `readiness.recovered`.
 */

type Status = ReturnType<typeof overall>
type Baseline = { driver: string | null; cuda: string | null; at: number } | null
type Readings = Map<number, Map<string, number | null>>

type Facts = {
  server: ServerSummary
  readings: Readings
  xids: Pick<Awaited<ReturnType<typeof xidCountsOfServer>>[number], 'gpuIndex' | 'xid' | 'count' | 'lastAt'>[]
  links: LinkedMachine[]
  states: ReadinessStateRow[]
}

type Entry = {
  marketplace: MarketplaceId
  linked: boolean
  external_machine_id: string | null
  link_state: 'linked' | 'stale' | 'conflict' | null
  platform_seen_at: string | null
  status: Status
  items: Item[]
}

function readingsOf(rows: Awaited<ReturnType<typeof latestMetricsOf>>): Map<string, Readings> {
  const out = new Map<string, Readings>()
  for (const r of rows) {
    let server = out.get(r.serverId)
    if (!server) out.set(r.serverId, (server = new Map()))
    let gpu = server.get(r.gpuIndex)
    if (!gpu) server.set(r.gpuIndex, (gpu = new Map()))
    gpu.set(r.metric, plausibleReading(r.metric, r.gpuIndex, r.value))
  }
  return out
}

/**
 * The driver baseline of `driver.unchanged`: the remembered one, moved to the agent's current
 * versions the first time they are known and whenever the platform turns the machine verified
 * (again) since the last evaluation. The read and the job take it from here alike.
 */
function nextBaseline(state: ReadinessStateRow | undefined, server: ServerSummary, verification: string | null, nowUs: number): Baseline {
  const driver = server.hostDetails?.driver_version ?? null
  const cuda = server.hostDetails?.cuda_version ?? null
  const held: Baseline = state?.baselineAt != null ? { driver: state.baselineDriver, cuda: state.baselineCuda, at: state.baselineAt } : null
  if (driver === null) return held
  const reverified = verification === 'verified' && (state?.lastVerification ?? null) !== 'verified'
  if (held === null || reverified) return { driver, cuda, at: nowUs }
  return held
}

function entriesOf(f: Facts, nowUs: number): { entries: Entry[]; baselines: Map<MarketplaceId, Baseline> } {
  const baselines = new Map<MarketplaceId, Baseline>()
  const entries = MARKETPLACES.map((marketplace): Entry => {
    const link = f.links.find((l) => l.marketplace === marketplace)
    // A stale link's machine left the platform's listing: its last view no longer speaks for it.
    const platform = link && link.state !== 'stale' ? link.remote : null
    const baseline = nextBaseline(
      f.states.find((s) => s.marketplace === marketplace),
      f.server,
      platform?.verification ?? null,
      nowUs,
    )
    baselines.set(marketplace, baseline)
    const items = checkReadiness({
      marketplace,
      platform,
      host: f.server.hostDetails,
      gpus: f.server.gpus,
      gpuCount: f.server.gpuCount,
      portRange: f.server.portRange,
      agentReported: f.server.lastHelloAt !== null,
      readings: f.readings,
      xids: f.xids,
      baseline,
      nowUs,
    })
    return {
      marketplace,
      linked: link !== undefined,
      external_machine_id: link?.externalMachineId ?? null,
      link_state: link?.state ?? null,
      platform_seen_at: link?.lastSeenAt == null ? null : formatTimestamp(link.lastSeenAt),
      status: overall(items),
      items,
    }
  })
  return { entries, baselines }
}

const RANK: Record<Status, number> = { ready: 0, unknown: 1, not_ready: 2 }

/** A server's verdict: the worst of the marketplaces it is linked on; linked nowhere, the worst of all. */
function serverStatus(entries: Entry[]): Status {
  const linked = entries.filter((e) => e.linked)
  return (linked.length ? linked : entries).reduce<Status>((worst, e) => (RANK[e.status] > RANK[worst] ? e.status : worst), 'ready')
}

async function factsOfServer(db: DbOrTx, server: ServerSummary): Promise<Facts> {
  return {
    server,
    readings: readingsOf(await latestMetricsOf(db, [server.id])).get(server.id) ?? new Map(),
    xids: await xidCountsOfServer(db, server.id),
    links: await linkedMachines(db, server.tenantId, server.id),
    states: await statesOfServer(db, server.tenantId, server.id),
  }
}

const sorted = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)))

const tagOf = (body: unknown) => `"r-${createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 32)}"`

/** GET /servers/{id}/readiness: a server of the actor's tenant the actor may see, else a plain 404. */
export async function serverReadiness({ deps, actor, id }: { deps: Deps; actor: Actor; id: string }) {
  const server = await loadServer(deps, actor, id)
  const nowUs = deps.clock.nowUs()
  const { entries } = entriesOf(await factsOfServer(deps.db, server), nowUs)
  const body = { server_id: server.id, name: server.name, status: serverStatus(entries), marketplaces: entries }
  return { etag: tagOf(body), body: { ...body, evaluated_at: formatTimestamp(nowUs) } }
}

/** Every managed server of the tenant the filter keeps, with its facts: a handful of reads for the whole fleet. */
async function tenantFacts(db: DbOrTx, tenantId: string, keep: (serverId: string) => boolean): Promise<Facts[]> {
  const servers = (await managedServers(db, tenantId)).filter((s) => keep(s.id))
  if (servers.length === 0) return []
  const readings = readingsOf(
    await latestMetricsOf(
      db,
      servers.map((s) => s.id),
    ),
  )
  const links = await linkedMachines(db, tenantId)
  const states = await statesOfTenant(db, tenantId)
  const xids = await xidCountsOfTenant(db, tenantId)
  return servers.map((server) => ({
    server,
    readings: readings.get(server.id) ?? new Map(),
    xids: xids.filter((x) => x.serverId === server.id),
    links: links.filter((l) => l.serverId === server.id),
    states: states.filter((s) => s.serverId === server.id),
  }))
}

/** GET /readiness: every managed server the actor may see, with its verdict per marketplace and what fails. */
export async function fleetReadiness({ deps, actor }: { deps: Deps; actor: Actor }) {
  const nowUs = deps.clock.nowUs()
  const rows = (await tenantFacts(deps.db, actor.tenantId, (id) => mayAccessServer(actor, id))).map((f) => {
    const { entries } = entriesOf(f, nowUs)
    return {
      server_id: f.server.id,
      name: f.server.name,
      status: serverStatus(entries),
      marketplaces: entries.map((e) => ({
        marketplace: e.marketplace,
        linked: e.linked,
        status: e.status,
        failing: e.items.filter((x) => x.status === 'fail').map((x) => x.id),
        unknown: e.items.filter((x) => x.status === 'unknown' && x.required).map((x) => x.id),
      })),
    }
  })
  const count = (s: Status) => rows.filter((r) => r.status === s).length
  const body = { counts: { ready: count('ready'), not_ready: count('not_ready'), unknown: count('unknown') }, servers: rows }
  return { etag: tagOf(body), body: { ...body, evaluated_at: formatTimestamp(nowUs) } }
}

/**
 * The evaluation (the `readiness.evaluate` job; the incident and the notification of a regression
 * are reactions to its server event, so they commit with it): per tenant, each managed server's items against the verdicts remembered, in one transaction
 * per server. An `unknown` keeps the verdict before it (a machine whose agent is offline has not
 * healed). Answers a summary for the job's record.
 */
export async function evaluateReadiness(deps: Deps, tenants: TenantWalk): Promise<string> {
  let regressions = 0
  let recoveries = 0
  let servers = 0
  for (const tenant of await listTenants(deps.db))
    await tenants.run(
      tenant.id,
      async () => {
        // Most runs see what the last one saw: the tenant's reads decide, and only a server whose
        // verdicts change is read again and written, in its own transaction.
        for (const facts of await tenantFacts(deps.db, tenant.id, () => true)) {
          servers++
          if (!(await evaluateServer(deps.db, deps, facts.server, facts, false)).changed) continue
          const counted = await withTransaction(deps.db, async (tx) => evaluateServer(tx, deps, facts.server, await factsOfServer(tx, facts.server), true))
          regressions += counted.regressed
          recoveries += counted.recovered
        }
      },
      'readiness',
    )
  return `readiness: ${servers} servers evaluated, ${regressions} regressions, ${recoveries} recoveries`
}

/** With `write` false, only whether anything would change (verdicts, baseline, verification seen) and nothing written. */
async function evaluateServer(
  tx: DbOrTx,
  deps: Deps,
  server: ServerSummary,
  facts: Facts,
  write: boolean,
): Promise<{ changed: boolean; regressed: number; recovered: number }> {
  const nowUs = deps.clock.nowUs()
  const { entries, baselines } = entriesOf(facts, nowUs)
  let regressed = 0
  let recovered = 0
  let changed = false
  for (const e of entries) {
    const state = facts.states.find((s) => s.marketplace === e.marketplace)
    const before = state?.verdicts ?? {}
    // Only a marketplace the server is linked on keeps verdicts and alerts: the others are what-ifs
    // from the agent's facts, and an item that passed there says nothing of the platform's view
    // (linking starts afresh, unlinking forgets).
    const verdicts: Record<string, 'pass' | 'fail'> = e.linked ? { ...before } : {}
    for (const it of e.items) {
      if (it.status === 'unknown' || !e.linked) continue
      verdicts[it.id] = it.status
      const data = { marketplace: e.marketplace, item: it.id, value: it.value, threshold: it.threshold }
      if (before[it.id] === 'pass' && it.status === 'fail') {
        regressed++
        if (write)
          await recordServerEvent(tx, deps, server, {
            kind: 'readiness.regressed',
            severity: 'error',
            message: `${e.marketplace}: ${it.title} no longer meets the bar: ${it.value ?? 'unknown'} (needs ${it.threshold}). ${it.action ?? ''}`.trim(),
            data,
          })
      } else if (before[it.id] === 'fail' && it.status === 'pass') {
        recovered++
        if (write)
          await recordServerEvent(tx, deps, server, {
            kind: 'readiness.recovered',
            severity: 'info',
            message: `${e.marketplace}: ${it.title} meets the bar again: ${it.value ?? ''}`.trim(),
            data,
          })
      }
    }
    const baseline = baselines.get(e.marketplace) ?? null
    const verification = e.linked ? (facts.links.find((l) => l.marketplace === e.marketplace)?.remote.verification ?? null) : null
    const next = {
      tenantId: server.tenantId,
      serverId: server.id,
      marketplace: e.marketplace,
      verdicts,
      baselineDriver: baseline?.driver ?? null,
      baselineCuda: baseline?.cuda ?? null,
      baselineAt: baseline?.at ?? null,
      lastVerification: verification,
      evaluatedAt: nowUs,
    }
    const same =
      state !== undefined &&
      JSON.stringify(sorted(state.verdicts)) === JSON.stringify(sorted(verdicts)) &&
      state.baselineAt === next.baselineAt &&
      state.lastVerification === next.lastVerification
    if (same) continue
    changed = true
    if (write) await saveState(tx, next)
  }
  return { changed, regressed, recovered }
}
