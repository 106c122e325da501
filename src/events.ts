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
  /**
   * A server's rental ended (fleet, after commit: the operator's PATCH or the agent's report).
   * Commands waiting for the rental to end are delivered.
   */
  'server.rental_ended': { serverId: string }
}
