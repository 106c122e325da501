import type { Deps } from './platform/context'
import { dispatchServer } from './modules/commands'
import { activateOnTopup } from './modules/subscription'

/**
 * Every cross-module reaction, registered once per Deps by buildDeps (the composition root), so a
 * process that only runs jobs (billing.reconcile crediting a late payment) reacts exactly as one that
 * serves HTTP. Modules never register themselves.
 */
export function registerReactions(deps: Deps): void {
  deps.events.on('topup.succeeded', ({ tx, topup }) => activateOnTopup(tx, deps, topup))
  deps.events.on('server.rental_ended', ({ serverId }) => dispatchServer(deps, serverId))
}
