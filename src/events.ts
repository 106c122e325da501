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
  'topup.succeeded': { tx: Tx; topup: { id: string; tenantId: string; changeId: string | null } }
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
  'server.event_recorded': { tx: Tx; server: { id: string; tenantId: string }; kind: string; severity: string; message: string }
  /** A tenant's account entered grace or was frozen, or became active again (billing, in its transaction). */
  'tenant.account_state_changed': { tx: Tx; tenantId: string; state: 'active' | 'grace' | 'frozen' }
  /** An hourly charge left the balance at or above zero but with fewer than 3 days left at the current rate (billing, in its transaction). */
  'tenant.balance_low': { tx: Tx; tenantId: string; daysLeft: number; balanceMicros: number }
  /** An offer was published or changed through gpuhq (marketplaces, in its transaction). */
  'offer.published': { tx: Tx; tenantId: string; serverId: string; marketplace: string; summary: string }
  /** A scheduled plan change was refused when its day came (subscription.fire, in its transaction; the spec's Events 3). */
  'subscription.change_refused': { tx: Tx; tenantId: string; targetPlan: string; reason: string }
}
