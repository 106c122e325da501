import type { DbOrTx, Tx } from '../../../db/client'
import type { AppEvents } from '../../events'
import type { Deps } from '../../platform/context'
import { formatMoney } from '../../platform/money'
import { formatDecimal } from '../../platform/numbers'
import { daysInMonth } from '../../platform/time'
import { balanceOf, LOW_BALANCE_DAYS } from '../billing'
import { countManagedServers, serverNameById, serverNamesByIds } from '../fleet'
import { MARKETPLACES } from '../marketplaces'
import { findPlan } from '../plans'
import { findTenant } from '../tenants'
import { findUnresolved, unresolvedOfServer } from './alerts.repository'
import { type Cause, clear, clearCause, clearCauses, raise, raiseMany } from './incidents'

/**
 * The event-driven causes (docs/alerts.md "Causes"), each reacting in the transaction that recorded
 * its event (src/reactions.ts registers them after the notification producers, so the notification
 * the same event produced is there to be linked).
 */

type ServerEvent = {
  tx: Tx
  server: { id: string; tenantId: string }
  kind: string
  severity: string
  message: string
  data?: Record<string, unknown> | null
}

const offlineKey = (serverId: string) => `offline:${serverId}`

export async function alertOnServerEvent(deps: Deps, e: ServerEvent): Promise<void> {
  const { tx, server } = e
  if (e.kind === 'presence.online') await clearCause(tx, deps, server.tenantId, offlineKey(server.id), 'the server is back online')
  else if (e.kind === 'server.decommissioned')
    for (const i of await unresolvedOfServer(tx, server.tenantId, server.id)) await clear(tx, deps, i, 'the server was decommissioned')
  else if (e.kind === 'presence.offline') {
    await raise(tx, deps, offlineCause(server, (await serverNameById(tx, server.id)) ?? server.id, e.message))
  } else if (e.kind === 'readiness.regressed' || e.kind === 'readiness.recovered') {
    // A readiness item that passed and now fails (docs/readiness.md), one cause per server, marketplace and item.
    const marketplace = MARKETPLACES.find((m) => m === e.data?.marketplace) ?? null
    const key = `readiness:${server.id}:${marketplace ?? ''}:${String(e.data?.item ?? '')}`
    if (e.kind === 'readiness.recovered') await clearCause(tx, deps, server.tenantId, key, e.message)
    else {
      const name = (await serverNameById(tx, server.id)) ?? server.id
      await raise(tx, deps, {
        tenantId: server.tenantId,
        kind: 'readiness',
        key,
        severity: 'warning',
        serverId: server.id,
        marketplace,
        title: `Readiness regressed: ${name}, ${String(e.data?.item ?? 'an item')} on ${marketplace ?? 'a marketplace'}`,
        detail: e.message,
      })
    }
  } else if (e.kind === 'marketplace.renter_report') await renterReport(deps, e)
  else if (e.kind.startsWith('agent.') && (e.severity === 'error' || e.severity === 'critical')) {
    // The same events the `error` notification producer takes (producers.ts categoryOf), one cause per server and kind.
    const name = (await serverNameById(tx, server.id)) ?? server.id
    await raise(tx, deps, {
      tenantId: server.tenantId,
      kind: 'agent_error',
      key: `agent_error:${server.id}:${e.kind}`,
      severity: e.severity === 'critical' ? 'critical' : 'warning',
      serverId: server.id,
      marketplace: null,
      title: `Agent reported ${e.kind.slice('agent.'.length)}: ${name}`,
      detail: e.message,
    })
  }
}

/**
 * A batch of server events (a presence flush's transitions, each server once): what
 * alertOnServerEvent does for each, the servers back online resolving their offline incidents
 * together (clearCauses: one read, one multi-row resolve per tenant) and the servers gone offline
 * raising theirs together (raiseMany: per tenant one read of the open incidents, one of their last
 * resolutions and one of the notifications to link, one multi-row insert; the names read at once).
 */
export async function alertOnServerEvents(deps: Deps, e: AppEvents['server.events_recorded']): Promise<void> {
  const back = e.events.filter((x) => x.kind === 'presence.online')
  if (back.length)
    await clearCauses(
      e.tx,
      deps,
      back.map((x) => ({ tenantId: x.server.tenantId, key: offlineKey(x.server.id) })),
      'the server is back online',
    )
  const gone = e.events.filter((x) => x.kind === 'presence.offline')
  if (gone.length) {
    const names = await serverNamesByIds(
      e.tx,
      gone.map((x) => x.server.id),
    )
    await raiseMany(
      e.tx,
      deps,
      gone.map((x) => offlineCause(x.server, names.get(x.server.id) ?? x.server.id, x.message)),
    )
  }
  for (const x of e.events) if (x.kind !== 'presence.online' && x.kind !== 'presence.offline') await alertOnServerEvent(deps, { ...x, tx: e.tx })
}

/** The cause a server's presence.offline raises. */
const offlineCause = (server: { id: string; tenantId: string }, name: string, message: string): Cause => ({
  tenantId: server.tenantId,
  kind: 'offline',
  key: offlineKey(server.id),
  severity: 'critical',
  serverId: server.id,
  marketplace: null,
  title: `Server offline: ${name}`,
  detail: message,
})

/**
 * A renter reported the server's marketplace machine (the marketplaces.sync job stored a new report):
 * one incident per report, resolved by a member (the platform never says a report is settled).
 */
async function renterReport(deps: Deps, e: ServerEvent): Promise<void> {
  const reportId = typeof e.data?.report_id === 'string' ? e.data.report_id : null
  if (!reportId) return
  const marketplace = MARKETPLACES.find((m) => m === e.data?.marketplace) ?? null
  const name = (await serverNameById(e.tx, e.server.id)) ?? e.server.id
  const problem = typeof e.data?.problem === 'string' && e.data.problem ? e.data.problem : 'a problem'
  await raise(e.tx, deps, {
    tenantId: e.server.tenantId,
    kind: 'renter_report',
    key: `renter_report:${e.server.id}:${reportId}`,
    severity: 'warning',
    serverId: e.server.id,
    marketplace,
    title: `Renter reported ${problem}: ${name}`,
    detail: e.message,
  })
}

const LOW_BALANCE_KEY = 'low_balance'
const lowBalance = { kind: 'low_balance', key: LOW_BALANCE_KEY, serverId: null, marketplace: null } as const

/** An hourly charge left under LOW_BALANCE_DAYS of balance at the current rate (billing's `tenant.balance_low`). */
export async function alertOnLowBalance(deps: Deps, e: { tx: Tx; tenantId: string; daysLeft: number; balanceMicros: number }): Promise<void> {
  await raise(e.tx, deps, {
    ...lowBalance,
    tenantId: e.tenantId,
    severity: 'warning',
    title: `Balance low: about ${Math.max(0, Math.floor(e.daysLeft * 24))} hours left`,
    detail: `The balance is ${formatMoney(e.balanceMicros)} USD: at the current rate it lasts about ${formatDecimal(e.daysLeft, 1, 1)} days. Top up to keep the account out of grace.`,
  })
}

/** Grace and freeze are the balance running out: the same cause, now critical. Active again: maybe covered again. */
export async function alertOnAccountState(deps: Deps, e: { tx: Tx; tenantId: string; state: 'active' | 'grace' | 'frozen' }): Promise<void> {
  if (e.state === 'active') {
    await settleLowBalance(e.tx, deps, e.tenantId)
    return
  }
  const text =
    e.state === 'grace'
      ? {
          title: 'Balance below zero: grace started',
          detail: `The balance is below zero. Top up within ${deps.config.gracePeriodHours} h or the account is frozen.`,
        }
      : { title: 'Account frozen: balance below zero', detail: 'The grace period ran out: changes are refused until a top-up brings the balance above zero.' }
  await raise(e.tx, deps, { ...lowBalance, tenantId: e.tenantId, severity: 'critical', ...text })
}

/** A top-up was credited (payments' `topup.succeeded`): the low-balance incident resolves if the balance covers it now. */
export async function alertOnTopup(deps: Deps, e: { tx: Tx; topup: { tenantId: string } }): Promise<void> {
  await settleLowBalance(e.tx, deps, e.topup.tenantId)
}

/** Resolves the tenant's low-balance incident when the account is active and its balance lasts LOW_BALANCE_DAYS again. */
export async function settleLowBalance(tx: DbOrTx, deps: Deps, tenantId: string): Promise<boolean> {
  const open = await findUnresolved(tx, tenantId, LOW_BALANCE_KEY)
  const why = open ? await balanceCovers(tx, deps, tenantId) : null
  if (open && why) await clear(tx, deps, open, why)
  return why !== null
}

/** Why the balance covers the rate again (a read), or null while it does not or the account is not active. */
export async function balanceCovers(db: DbOrTx, deps: Deps, tenantId: string): Promise<string | null> {
  const tenant = await findTenant(db, tenantId)
  if (tenant?.accountState !== 'active') return null
  const price = tenant.planCode ? ((await findPlan(db, tenant.planCode))?.priceMicrosPerServerMonth ?? null) : null
  const d = new Date(deps.clock.nowUs() / 1000)
  // The rate billing's own figures use (GET /billing days_left, the hourly charge's warning).
  const perDay = ((price ?? 0) * (await countManagedServers(db, tenantId))) / daysInMonth(d.getUTCFullYear(), d.getUTCMonth() + 1)
  const balance = await balanceOf(db, tenantId)
  if (perDay <= 0) return `nothing is charged at the current plan and fleet; the balance is ${formatMoney(balance)} USD`
  if (balance < LOW_BALANCE_DAYS * perDay) return null
  return `the balance of ${formatMoney(balance)} USD lasts about ${formatDecimal(balance / perDay, 1, 1)} days again`
}

const PAYOUT_GAP_KEY = 'payout_gap'

/**
 * The platform paid less than accrual minus commission by more than the owner's threshold on some
 * (server, marketplace, day) (docs/marketplaces.md "Payouts reconciled"): one account-wide cause,
 * counted again when a new row is flagged, resolved when none is.
 */
export async function alertOnPayoutGap(
  deps: Deps,
  e: { tx: Tx; tenantId: string; rows: { serverName: string; marketplace: string; day: string; gapMicros: number }[]; thresholdMicros: number },
): Promise<void> {
  const total = e.rows.reduce((s, r) => s + r.gapMicros, 0)
  const listed = e.rows
    .slice(0, 10)
    .map((r) => `${r.day} ${r.serverName} on ${r.marketplace}: ${formatMoney(r.gapMicros)} USD`)
    .join('; ')
  await raise(e.tx, deps, {
    tenantId: e.tenantId,
    kind: 'payout_gap',
    key: PAYOUT_GAP_KEY,
    severity: 'warning',
    serverId: null,
    marketplace: null,
    title: `Platform paid ${formatMoney(total)} USD less than expected on ${e.rows.length} machine-day${e.rows.length === 1 ? '' : 's'}`,
    detail: `Unexplained shortfall beyond the commission, over your threshold of ${formatMoney(e.thresholdMicros)} USD: ${listed}${e.rows.length > 10 ? '; …' : ''}. See GET /reconciliation.`,
  })
}

/** No machine-day is flagged any more. */
export async function alertOnPayoutGapCleared(deps: Deps, e: { tx: Tx; tenantId: string; resolution: string }): Promise<void> {
  await clearCause(e.tx, deps, e.tenantId, PAYOUT_GAP_KEY, e.resolution)
}
