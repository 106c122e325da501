import type { Tx } from '../db/client'

/**
 * The events one module emits for others to react to (src/platform/events.ts says how they run;
 * src/reactions.ts wires who reacts). Each names the transaction it is emitted in when the reaction
 * must commit with it.
 */
export type AppEvents = {
  /**
   * A top-up's one credit was booked (payments, in the crediting transaction). The subscription
   * feature applies a paid upgrade waiting for it in the same transaction.
   */
  'topup.succeeded': {
    tx: Tx
    topup: { id: string; tenantId: string; changeId: string | null; amountMicros: number; creditedMicros: number; paymentMethod: string }
  }
  /** A top-up ended without a credit: held for review, expired unpaid, or failed (payments' moveTopup, in its transaction). */
  'topup.not_credited': {
    tx: Tx
    topup: { id: string; tenantId: string; amountMicros: number; paymentMethod: string }
    status: 'review' | 'expired' | 'failed'
  }
  /**
   * A server's rental ended (fleet, after commit: the operator's PATCH or the agent's report).
   * Commands waiting for the rental to end are delivered.
   */
  'server.rental_ended': { serverId: string }
  /**
   * A typed server event was recorded (fleet's recordServerEvent, in its transaction): presence
   * transitions, maintenance, rentals a marketplace reports, what the agent reports. Notifications
   * turn the ones a category covers into a notification that commits with it.
   */
  'server.event_recorded': {
    tx: Tx
    server: { id: string; tenantId: string }
    /** The server event's id and when it happened (a presence step may be written after it happened). */
    eventId: string
    at: number
    kind: string
    severity: string
    message: string
    data: Record<string, unknown> | null
  }
  /**
   * Typed server events recorded together (fleet's recordServerEvents, in its transaction): the
   * presence transitions of one group-committed flush, each server at most once per batch, in the
   * order they happened. Each reaction does for every event what it does for one
   * `server.event_recorded`, its reads and writes taken per batch (docs/fleet.md "Presence").
   */
  'server.events_recorded': { tx: Tx; events: Omit<AppEvents['server.event_recorded'], 'tx'>[] }
  /**
   * One source of a server's rental facts changed (fleet, in its transaction): the operator's or the
   * agent's `rental_active`, or a marketplace that started or stopped reporting a rental. `running`
   * is whether any source still says a rental runs.
   */
  'server.rental_changed': { tx: Tx; server: { id: string; tenantId: string }; source: string; started: boolean; running: boolean }
  /**
   * A command changed state (commands, in its transaction): created, a step on the delivery or the
   * execution axis, or a cancel asked of the agent. Progress and queue reasons alone are not state changes.
   */
  'command.changed': {
    tx: Tx
    command: { id: string; tenantId: string; serverId: string; type: string; deliveryStatus: string; executionStatus: string; queueReason: string | null }
    axis: 'command' | 'delivery' | 'execution'
    from: string | null
    to: string
    note: string | null
  }
  /** An alert incident opened, was acknowledged or resolved (alerts, in its transaction). */
  'alert.changed': {
    tx: Tx
    incident: { id: string; tenantId: string; serverId: string | null; kind: string; severity: string; marketplace: string | null; title: string }
    change: 'opened' | 'acknowledged' | 'resolved'
    /** The member who acknowledged or resolved it; null when gpuhq did (the cause cleared). */
    by: string | null
    resolution: string | null
  }
  /**
   * Several alert incidents changed together (alerts' raiseMany and clearCauses, a presence flush's
   * transitions, in its transaction): each reaction does for every change, in order, what it does
   * for one `alert.changed`, its writes taken per batch.
   */
  'alerts.changed': { tx: Tx; changes: Omit<AppEvents['alert.changed'], 'tx'>[] }
  /** A tenant's account entered grace or was frozen, or became active again (billing, in its transaction). */
  'tenant.account_state_changed': { tx: Tx; tenantId: string; state: 'active' | 'grace' | 'frozen' }
  /** An hourly charge left the balance at or above zero but with fewer than 3 days left at the current rate (billing, in its transaction). */
  'tenant.balance_low': { tx: Tx; tenantId: string; daysLeft: number; balanceMicros: number }
  /** An offer was published or changed through gpuhq (marketplaces, in its transaction). */
  'offer.published': { tx: Tx; tenantId: string; serverId: string; marketplace: string; summary: string }
  /** A scheduled plan change was refused when its day came (subscription.fire, in its transaction; the spec's Events 3). */
  'subscription.change_refused': { tx: Tx; tenantId: string; targetPlan: string; reason: string }
  /**
   * The reconciliation.evaluate job flagged a (server, marketplace, day) the platform paid less for
   * than accrual minus commission by more than the owner's threshold (reconciliation, in its
   * transaction; only when a row is newly flagged). `rows` are every row flagged now.
   */
  'payouts.gap_flagged': {
    tx: Tx
    tenantId: string
    rows: { serverId: string; serverName: string; marketplace: string; day: string; gapMicros: number }[]
    thresholdMicros: number
  }
  /** No row is flagged any more (reconciliation, in its transaction). */
  'payouts.gap_cleared': { tx: Tx; tenantId: string; resolution: string }
}
