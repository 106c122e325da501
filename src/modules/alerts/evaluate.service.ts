import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import type { TenantWalk } from '../../platform/jobs'
import { formatTimestamp } from '../../platform/time'
import { latestOfMetric, trustedServerById } from '../fleet'
import { accountHealth, staleLinks } from '../marketplaces'
import { TEMPERATURE_MARKS } from '../notifications'
import { findUnresolved, type IncidentRow, unresolvedIncidents } from './alerts.repository'
import { balanceCovers, settleLowBalance } from './alerts.reactions'
import { type Cause, clear, isNews, linkNotifications, notificationLinks, type Outcome, raise } from './incidents'

/**
 * The `alerts.evaluate` job (docs/alerts.md): the causes that are states rather than events. GPU
 * temperatures, marketplace accounts and stale links are compared with the unresolved incidents;
 * agent errors that stopped recurring and balances that cover the rate again are resolved; then
 * notifications produced since the last run are linked. Each change is its own transaction, and an
 * unchanged state writes nothing, so running it twice changes nothing the second time.
 */

/** An agent error not reported again for this long is resolved. */
const AGENT_ERROR_QUIET_US = 60 * 60 * 1_000_000

type Tally = Record<Outcome | 'resolved' | 'linked', number>

/** What each step of a run shares: the incidents unresolved when it started, and the two writes. */
type Run = {
  deps: Deps
  unresolved: (kinds: readonly string[]) => IncidentRow[]
  raise: (cause: Cause, observedAt: number) => Promise<void>
  resolve: (i: IncidentRow, why: string) => Promise<void>
}

export async function evaluateAlerts(deps: Deps, tenants: TenantWalk): Promise<string> {
  const tally: Tally = { opened: 0, repeated: 0, unchanged: 0, resolved: 0, linked: 0 }
  const snapshot = await unresolvedIncidents(deps.db)
  // Every write is one tenant's, in the job's per-tenant boundary: a tenant whose incident cannot be
  // written is logged and left out for a while; the other tenants' alerts still open and resolve.
  // The tally is counted after each commit: a PostgreSQL transaction run again must not count twice.
  const run: Run = {
    deps,
    unresolved: (kinds) => snapshot.filter((i) => kinds.includes(i.kind)),
    raise: async (cause, observedAt) => {
      await tenants.run(cause.tenantId, async () => {
        // Most runs see what the last one saw: a read decides, and only news takes the write lock.
        if (await isNews(deps.db, deps, cause, observedAt)) tally[await withTransaction(deps.db, (tx) => raise(tx, deps, cause, observedAt))]++
      })
    },
    resolve: async (i, why) => {
      const resolved = await tenants.run(i.tenantId, () =>
        withTransaction(deps.db, async (tx) => {
          // Re-read inside the transaction: a reaction or a member may have resolved it meanwhile.
          const still = await findUnresolved(tx, i.tenantId, i.causeKey)
          if (still?.id !== i.id) return false
          await clear(tx, deps, still, why)
          return true
        }),
      )
      if (resolved) tally.resolved++
    },
  }
  await temperatures(run)
  await marketplaceAccounts(run)
  await links(run)
  const now = deps.clock.nowUs()
  for (const i of run.unresolved(['agent_error']))
    if (i.lastSeenAt <= now - AGENT_ERROR_QUIET_US) await run.resolve(i, `not reported again for ${AGENT_ERROR_QUIET_US / 60_000_000} minutes`)
  for (const i of run.unresolved(['low_balance']))
    await tenants.run(i.tenantId, async () => {
      if ((await balanceCovers(deps.db, deps, i.tenantId)) && (await withTransaction(deps.db, (tx) => settleLowBalance(tx, deps, i.tenantId)))) tally.resolved++
    })
  // Notifications a job produced after the incident opened (a GPU hot for two minutes) are linked here.
  for (const i of await unresolvedIncidents(deps.db))
    await tenants.run(i.tenantId, async () => {
      if ((await notificationLinks(deps.db, i, deps.clock.nowUs())).length === i.notificationIds.length) return
      const linked = await withTransaction(deps.db, async (tx) => {
        const still = await findUnresolved(tx, i.tenantId, i.causeKey)
        return still?.id === i.id && (await linkNotifications(tx, deps, still)).length !== still.notificationIds.length
      })
      if (linked) tally.linked++
    })
  return `${tally.opened} incidents opened, ${tally.repeated} repeats counted, ${tally.resolved} resolved, ${tally.linked} linked to new notifications`
}

/** A GPU at or above the notifier's high mark opens; a reading below its low mark resolves (hysteresis); stale readings say nothing. */
async function temperatures({ deps, unresolved, raise: raiseIn, resolve }: Run): Promise<void> {
  const { highC, lowC, staleUs } = TEMPERATURE_MARKS
  const open = new Map(unresolved(['temperature']).map((i) => [`${i.tenantId}|${i.causeKey}`, i]))
  for (const r of await latestOfMetric(deps.db, 'temperature_c', deps.clock.nowUs() - staleUs)) {
    if (r.gpuIndex < 0 || r.value === null) continue
    const key = `temperature:${r.serverId}:${r.gpuIndex}`
    const incident = open.get(`${r.tenantId}|${key}`)
    if (r.value < lowC) {
      if (incident) await resolve(incident, `GPU ${r.gpuIndex} reads ${Math.round(r.value)} °C, below ${lowC} °C`)
      continue
    }
    if (r.value < highC) continue
    await raiseIn(
      {
        tenantId: r.tenantId,
        kind: 'temperature',
        key,
        severity: 'critical',
        serverId: r.serverId,
        marketplace: null,
        title: `GPU ${r.gpuIndex} hot: ${r.name}`,
        detail: `GPU ${r.gpuIndex} of ${r.name} reads ${Math.round(r.value)} °C, at or above ${highC} °C. Resolved once it reads below ${lowC} °C.`,
      },
      r.t,
    )
  }
}

/** An account whose stored key the platform rejected (`invalid_key`), or whose last call failed, until it works again. */
async function marketplaceAccounts({ deps, unresolved, raise: raiseIn, resolve }: Run): Promise<void> {
  const accounts = await accountHealth(deps.db)
  const failing = new Set<string>()
  const present = new Set<string>()
  for (const a of accounts) {
    const key = `marketplace_error:${a.marketplace}`
    present.add(`${a.tenantId}|${key}`)
    const rejected = a.status === 'invalid_key'
    if (!rejected && a.lastFailure === null) continue
    failing.add(`${a.tenantId}|${key}`)
    await raiseIn(
      {
        tenantId: a.tenantId,
        kind: 'marketplace_error',
        key,
        severity: rejected ? 'critical' : 'warning',
        serverId: null,
        marketplace: a.marketplace,
        title: rejected ? `${a.marketplace} rejected the stored API key` : `${a.marketplace} calls are failing`,
        detail: rejected
          ? `${a.lastFailure ?? 'the marketplace rejected the key'}. gpuhq does not send it again: connect a working key with PUT /api/v1/marketplaces/${a.marketplace}.`
          : (a.lastFailure ?? 'the last call failed'),
      },
      a.lastFailureAt ?? a.updatedAt,
    )
  }
  for (const i of unresolved(['marketplace_error'])) {
    const at = `${i.tenantId}|${i.causeKey}`
    if (!present.has(at)) await resolve(i, 'the account was disconnected')
    else if (!failing.has(at)) await resolve(i, 'the account is connected and its calls succeed again')
  }
}

/** A link the sync marked stale (its machine left the platform's listing), until it is listed again or unlinked. */
async function links({ deps, unresolved, raise: raiseIn, resolve }: Run): Promise<void> {
  const stale = new Set<string>()
  for (const l of await staleLinks(deps.db)) {
    const server = await trustedServerById(deps.db, l.serverId)
    if (!server || server.decommissionedAt !== null) continue
    const key = `stale_link:${l.serverId}:${l.marketplace}`
    stale.add(`${l.tenantId}|${key}`)
    const lastSeen = l.lastSeenAt === null ? 'never seen there' : `last seen ${formatTimestamp(l.lastSeenAt)}`
    await raiseIn(
      {
        tenantId: l.tenantId,
        kind: 'stale_link',
        key,
        severity: 'warning',
        serverId: l.serverId,
        marketplace: l.marketplace,
        title: `Link stale: ${server.name} on ${l.marketplace}`,
        detail: `Machine ${l.externalMachineId} no longer appears in ${l.marketplace}'s listing (${lastSeen}); its rentals and offers are not followed.`,
      },
      l.checkedAt ?? 0,
    )
  }
  for (const i of unresolved(['stale_link']))
    if (!stale.has(`${i.tenantId}|${i.causeKey}`)) await resolve(i, 'the link is no longer stale: the machine is listed again, or the link was removed')
}
