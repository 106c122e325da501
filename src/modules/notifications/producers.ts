import type { Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { formatMoney } from '../../platform/money'
import { formatDecimal } from '../../platform/numbers'
import { serverNameById, serverNamesByIds, trustedServerById } from '../fleet'
import type { Category } from './notifications.model'
import { notify, notifyMany } from './outbox.service'

/**
 * What becomes a notification (docs/notifications.md "Categories"), each from the event that really
 * happens, in the transaction that recorded it. Server events arrive through fleet's one
 * recordServerEvent (every presence transition, maintenance, rental a marketplace reports, agent
 * report); repeats of one condition share a group key, so a flapping server or an agent repeating an
 * error is notified once per 30 minutes, not once per sample.
 */

type ServerEvent = {
  tx: Tx
  server: { id: string; tenantId: string }
  kind: string
  severity: string
  message: string
  data?: Record<string, unknown> | null
}

/** `<marketplace>:<item>` of a readiness event's data. */
const readinessItem = (e: ServerEvent) => `${String(e.data?.marketplace ?? '')}:${String(e.data?.item ?? '')}`

/** Server event kinds that notify, with their category and how repeats are grouped. */
function categoryOf(e: ServerEvent): { category: Category; title: string; group: string } | null {
  if (e.kind === 'presence.offline') return { category: 'offline', title: 'Server offline', group: `offline:${e.server.id}` }
  if (e.kind === 'maintenance.declared') return { category: 'maint', title: 'Maintenance declared', group: `maint:${e.server.id}` }
  if (e.kind === 'marketplace.maintenance_announced')
    return { category: 'maint', title: 'Maintenance announced', group: `maint-announced:${e.server.id}:${e.message}` }
  if (e.kind === 'marketplace.rental_started') return { category: 'rental', title: 'Rental started', group: `rental-start:${e.server.id}:${e.message}` }
  if (e.kind === 'marketplace.rental_ended') return { category: 'rental', title: 'Rental ended', group: `rental-end:${e.server.id}:${e.message}` }
  // A renter's report on a marketplace machine (docs/marketplaces.md "Renter reports"): something is wrong with the machine, once per report.
  if (e.kind === 'marketplace.renter_report')
    return { category: 'error', title: 'Renter report', group: `renter-report:${e.server.id}:${String(e.data?.report_id ?? e.message)}` }
  if (e.kind === 'marketplace.offer_republished') return { category: 'price', title: 'Offer published again', group: `offer:${e.server.id}` }
  // An item of the readiness check list that passed and now fails (docs/readiness.md): the `error` category, one group per item.
  if (e.kind === 'readiness.regressed') return { category: 'error', title: 'Readiness regressed', group: `readiness:${e.server.id}:${readinessItem(e)}` }
  // The watchdog's notify step and its page when it gives up (docs/watchdog.md): `error`, critical.
  if (e.kind === 'watchdog.notified') return { category: 'error', title: 'Watchdog', group: `watchdog:${e.server.id}:${e.message}` }
  if (e.kind === 'watchdog.gave_up') return { category: 'error', title: 'Watchdog gave up', group: `watchdog-gave-up:${e.server.id}:${e.message}` }
  // A drain's end (docs/marketplaces.md "Drain"): the server is back on the market, or it stopped and says why.
  if (e.kind === 'drain.done' || e.kind === 'drain.failed')
    return {
      category: 'maint',
      title: e.kind === 'drain.done' ? 'Drain done' : 'Drain failed',
      group: `${e.kind}:${e.server.id}:${String(e.data?.drain_id ?? '')}`,
    }
  if (e.kind.startsWith('agent.') && (e.severity === 'error' || e.severity === 'critical'))
    return { category: 'error', title: 'Agent reported an error', group: `error:${e.server.id}:${e.kind}` }
  return null
}

export async function fromServerEvent(deps: Deps, e: ServerEvent): Promise<void> {
  const c = categoryOf(e)
  if (!c) return
  const name = (await serverNameById(e.tx, e.server.id)) ?? e.server.id
  await notify(e.tx, deps, e.server.tenantId, { category: c.category, title: `${c.title}: ${name}`, body: e.message, groupKey: c.group })
}

/**
 * A batch of server events (a presence flush's transitions): each becomes what fromServerEvent makes
 * of it, in order, per tenant through notifyMany (its settings, timezone, channels and the groups'
 * latest notifications read once) and the servers' names read at once.
 */
export async function fromServerEvents(deps: Deps, e: { tx: Tx; events: Omit<ServerEvent, 'tx'>[] }): Promise<void> {
  const byTenant = new Map<string, { serverId: string; message: string; c: NonNullable<ReturnType<typeof categoryOf>> }[]>()
  for (const x of e.events) {
    const c = categoryOf(x as ServerEvent)
    if (!c) continue
    const list = byTenant.get(x.server.tenantId)
    const item = { serverId: x.server.id, message: x.message, c }
    if (list) list.push(item)
    else byTenant.set(x.server.tenantId, [item])
  }
  if (byTenant.size === 0) return
  const names = await serverNamesByIds(e.tx, [...new Set([...byTenant.values()].flatMap((l) => l.map((i) => i.serverId)))])
  for (const [tenantId, list] of byTenant)
    await notifyMany(
      e.tx,
      deps,
      tenantId,
      list.map(({ serverId, message, c }) => ({
        category: c.category,
        title: `${c.title}: ${names.get(serverId) ?? serverId}`,
        body: message,
        groupKey: c.group,
      })),
    )
}

export async function fromAccountState(deps: Deps, e: { tx: Tx; tenantId: string; state: 'active' | 'grace' | 'frozen' }): Promise<void> {
  if (e.state === 'grace')
    await notify(e.tx, deps, e.tenantId, {
      category: 'balance',
      title: 'Balance below zero: grace started',
      body: `Your gpuhq balance is below zero. Top up within ${deps.config.gracePeriodHours} h or the account is frozen.`,
      groupKey: 'account:grace',
    })
  if (e.state === 'frozen')
    await notify(e.tx, deps, e.tenantId, {
      category: 'balance',
      title: 'Account frozen',
      body: 'The grace period ran out: changes are refused until a top-up brings the balance above zero.',
      groupKey: 'account:frozen',
    })
}

export async function fromTopup(deps: Deps, e: { tx: Tx; topup: { id: string; tenantId: string } }): Promise<void> {
  await notify(e.tx, deps, e.topup.tenantId, { category: 'payment', title: 'Top-up credited', body: `Top-up ${e.topup.id} was credited to your balance.` })
}

const NOT_CREDITED = {
  expired: { title: 'Top-up expired unpaid', why: 'expired before a payment arrived; nothing was charged. A payment that still arrives for it is credited.' },
  failed: { title: 'Top-up failed', why: 'failed at the payment provider; nothing was credited.' },
  review: {
    title: 'Top-up held for review',
    why: 'is held for review by the operator (the payment did not match the invoice); nothing is credited until it is settled.',
  },
} as const

export async function fromTopupNotCredited(
  deps: Deps,
  e: { tx: Tx; topup: { id: string; tenantId: string; amountMicros: number; paymentMethod: string }; status: keyof typeof NOT_CREDITED },
): Promise<void> {
  const text = NOT_CREDITED[e.status]
  await notify(e.tx, deps, e.topup.tenantId, {
    category: 'payment',
    title: text.title,
    body: `Top-up ${e.topup.id} of ${formatMoney(e.topup.amountMicros)} USD (${e.topup.paymentMethod}) ${text.why}`,
    groupKey: `topup:${e.topup.id}:${e.status}`,
    groupWindowUs: 30 * 24 * 3600 * 1_000_000,
  })
}

export async function fromPlanRefusal(deps: Deps, e: { tx: Tx; tenantId: string; targetPlan: string; reason: string }): Promise<void> {
  const why = e.reason === 'reserve_not_covered' ? 'the balance does not cover the new plan' : 'the change is no longer a downgrade'
  await notify(e.tx, deps, e.tenantId, {
    category: 'payment',
    title: `Plan change to ${e.targetPlan} refused`,
    body: `The scheduled change to ${e.targetPlan} was refused when its day came: ${why} (${e.reason}).`,
  })
}

export async function fromOfferPublished(deps: Deps, e: { tx: Tx; tenantId: string; serverId: string; marketplace: string; summary: string }): Promise<void> {
  const name = (await trustedServerById(e.tx, e.serverId))?.name ?? e.serverId
  await notify(e.tx, deps, e.tenantId, {
    category: 'price',
    title: `Offer updated: ${name}`,
    body: `The ${e.marketplace} offer of ${name} is now ${e.summary}.`,
    groupKey: `offer:${e.serverId}:${e.marketplace}:${e.summary}`,
  })
}

/** A low balance: at most one warning a day while it lasts (grace and freeze have their own). */
export async function fromLowBalance(deps: Deps, e: { tx: Tx; tenantId: string; daysLeft: number; balanceMicros: number }): Promise<void> {
  const day = new Date(deps.clock.nowUs() / 1000).toISOString().slice(0, 10)
  await notify(e.tx, deps, e.tenantId, {
    category: 'balance',
    title: `Balance low: about ${Math.max(0, Math.floor(e.daysLeft * 24))} hours left`,
    body: `Your gpuhq balance is ${formatMoney(e.balanceMicros)} USD: at the current rate it lasts about ${formatDecimal(e.daysLeft, 1, 1)} days. Top up to keep the account out of grace.`,
    groupKey: `balance-low:${day}`,
    groupWindowUs: 24 * 3600 * 1_000_000,
  })
}

/**
 * The reconciliation flagged a machine-day the platform paid less for than accrual minus commission
 * beyond the owner's threshold (docs/marketplaces.md "Payouts reconciled"): a `payment` notification
 * (money owed to the host), once per set of flagged days.
 */
export async function fromPayoutGap(
  deps: Deps,
  e: { tx: Tx; tenantId: string; rows: { serverName: string; marketplace: string; day: string; gapMicros: number }[]; thresholdMicros: number },
): Promise<void> {
  const total = e.rows.reduce((s, r) => s + r.gapMicros, 0)
  const days = [...new Set(e.rows.map((r) => r.day))].sort()
  await notify(e.tx, deps, e.tenantId, {
    category: 'payment',
    title: 'Platform paid less than expected',
    body: `${e.rows.length} machine-day${e.rows.length === 1 ? '' : 's'} (${days.join(', ')}) fell ${formatMoney(total)} USD short of accrual minus commission, beyond your threshold of ${formatMoney(e.thresholdMicros)} USD. See the Reconciliation page.`,
    groupKey: `payout-gap:${days.join(',').slice(0, 180)}:${e.rows.length}`,
  })
}
