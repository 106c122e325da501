import { afterCommit } from '../db/client'
import type { Deps } from './platform/context'
import { announceDeliverable, deliverAcrossInstances, dispatchServer } from './modules/commands'
import {
  fromAccountState,
  fromLowBalance,
  fromOfferPublished,
  fromPayoutGap,
  fromPlanRefusal,
  fromServerEvent,
  fromServerEvents,
  fromTopup,
  fromTopupNotCredited,
} from './modules/notifications'
import { activateOnTopup } from './modules/subscription'
import {
  alertOnAccountState,
  alertOnLowBalance,
  alertOnPayoutGap,
  alertOnPayoutGapCleared,
  alertOnServerEvent,
  alertOnServerEvents,
  alertOnTopup,
} from './modules/alerts'
import { watchdogOnServerEvent, watchdogOnServerEvents } from './modules/watchdog'
import { advanceServerDrains, drainHold } from './modules/drains'
import { registerListingHold } from './modules/marketplaces'

/** The execution states that end a command (a drain's work waits for them). */
const DRAIN_WORK_ENDS = ['succeeded', 'failed', 'cancelled', 'expired']
import {
  liveFromAlert,
  liveFromAlerts,
  liveFromCommand,
  liveFromRental,
  liveFromServerEvent,
  liveFromServerEvents,
  liveFromTopup,
  liveFromTopupNotCredited,
} from './modules/live'

/**
 * Every cross-module reaction, registered once per Deps by buildDeps (the composition root), so a
 * process that only runs jobs (billing.reconcile crediting a late payment) reacts exactly as one that
 * serves HTTP. Modules never register themselves.
 */
export function registerReactions(deps: Deps): void {
  // A drain keeps its server's offers off the market until its work is done (docs/marketplaces.md "Drain").
  registerListingHold(deps, drainHold)
  deps.events.on('topup.succeeded', ({ tx, topup }) => activateOnTopup(tx, deps, topup))
  deps.events.on('server.rental_ended', async ({ serverId }) => {
    await dispatchServer(deps, serverId)
    await announceDeliverable(deps, serverId) // the agent may be connected to another instance (PostgreSQL)
    await advanceServerDrains(deps, serverId) // a drain waiting for the rental's end moves on (docs/marketplaces.md "Drain")
  })
  // A command of a drain's work ended: the drain moves on once that change committed (a change
  // rolled back leaves nothing to move on).
  deps.events.on('command.changed', ({ tx, command, axis, to }) => {
    if (axis === 'execution' && DRAIN_WORK_ENDS.includes(to))
      afterCommit(tx, () => void advanceServerDrains(deps, command.serverId).catch((error) => deps.log.error('could not move a drain on', { error })))
  })
  // Commands created on another instance for an agent connected to this one (PostgreSQL LISTEN).
  deliverAcrossInstances(deps)
  // Notifications: each from the event that really happens, committed with it.
  deps.events.on('server.event_recorded', (e) => fromServerEvent(deps, e))
  deps.events.on('server.events_recorded', (e) => fromServerEvents(deps, e))
  deps.events.on('tenant.account_state_changed', (e) => fromAccountState(deps, e))
  deps.events.on('topup.succeeded', (e) => fromTopup(deps, e))
  deps.events.on('topup.not_credited', (e) => fromTopupNotCredited(deps, e))
  deps.events.on('subscription.change_refused', (e) => fromPlanRefusal(deps, e))
  deps.events.on('offer.published', (e) => fromOfferPublished(deps, e))
  deps.events.on('tenant.balance_low', (e) => fromLowBalance(deps, e))
  deps.events.on('payouts.gap_flagged', (e) => fromPayoutGap(deps, e))
  // Alert incidents, after the notifications above so the one the same event produced is linked.
  deps.events.on('server.event_recorded', (e) => alertOnServerEvent(deps, e))
  deps.events.on('server.events_recorded', (e) => alertOnServerEvents(deps, e))
  deps.events.on('tenant.balance_low', (e) => alertOnLowBalance(deps, e))
  deps.events.on('tenant.account_state_changed', (e) => alertOnAccountState(deps, e))
  deps.events.on('topup.succeeded', (e) => alertOnTopup(deps, e))
  deps.events.on('payouts.gap_flagged', (e) => alertOnPayoutGap(deps, e))
  deps.events.on('payouts.gap_cleared', (e) => alertOnPayoutGapCleared(deps, e))
  // What the watchdog keeps of Xids and missing GPUs, committed with the event (docs/watchdog.md).
  deps.events.on('server.event_recorded', (e) => watchdogOnServerEvent(e))
  deps.events.on('server.events_recorded', (e) => watchdogOnServerEvents(e))
  // The live event stream's buffer: a row per change, in the change's transaction (docs/events.md).
  deps.events.on('server.event_recorded', (e) => liveFromServerEvent(deps, e))
  deps.events.on('server.events_recorded', (e) => liveFromServerEvents(deps, e))
  deps.events.on('server.rental_changed', (e) => liveFromRental(deps, e))
  deps.events.on('command.changed', (e) => liveFromCommand(deps, e))
  deps.events.on('alert.changed', (e) => liveFromAlert(deps, e))
  deps.events.on('alerts.changed', (e) => liveFromAlerts(deps, e))
  deps.events.on('topup.succeeded', (e) => liveFromTopup(deps, e))
  deps.events.on('topup.not_credited', (e) => liveFromTopupNotCredited(deps, e))
}
