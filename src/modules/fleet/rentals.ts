import type { DbOrTx, Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { recordServerEvent } from './events'
import { findServerById, updateServer, type ServerRow } from './fleet.repository'

/**
 * A server's rental facts (docs/commands.md "requires and rental facts"). Two kinds of source:
 * the operator's or the agent's fact (`rental_active`, the latest write wins) and the marketplaces
 * whose linked machine reports a running rental (kept by the marketplaces.sync job). A rental runs
 * while any source says so; commands with `requires` idle or after_rental wait for all of them.
 */

type RentalFacts = Pick<ServerRow, 'rentalActive' | 'rentalSource' | 'marketRentals'>

export function rentalRunning(server: RentalFacts): boolean {
  return server.rentalActive || server.marketRentals.length > 0
}

/** Who says a rental runs now: `operator` or `agent`, then each reporting marketplace. */
export function rentalSources(server: RentalFacts): string[] {
  return [...(server.rentalActive ? [server.rentalSource ?? 'operator'] : []), ...server.marketRentals]
}

/**
 * Sets the marketplaces that report a running rental on the server, recording a server event per
 * marketplace that started or stopped reporting one. Answers true when no rental runs any more
 * though one ran before (the caller emits `server.rental_ended` after its transaction commits).
 */
export async function setMarketRentals(
  tx: DbOrTx,
  deps: Pick<Deps, 'newId' | 'clock' | 'events'>,
  serverId: string,
  marketplaces: readonly string[],
): Promise<boolean> {
  const server = await findServerById(tx, serverId)
  if (!server) return false
  const next = [...new Set(marketplaces)].sort()
  const before = server.marketRentals
  if (next.length === before.length && next.every((m, i) => m === before[i])) return false
  const running = rentalRunning({ ...server, marketRentals: next })
  for (const m of next.filter((x) => !before.includes(x))) {
    await recordServerEvent(tx, deps, server, { kind: 'marketplace.rental_started', message: `${m} reports a running rental`, data: { marketplace: m } })
    await deps.events.emit('server.rental_changed', { tx: tx as Tx, server: { id: server.id, tenantId: server.tenantId }, source: m, started: true, running })
  }
  for (const m of before.filter((x) => !next.includes(x))) {
    await recordServerEvent(tx, deps, server, {
      kind: 'marketplace.rental_ended',
      message: `${m} reports no running rental any more`,
      data: { marketplace: m },
    })
    await deps.events.emit('server.rental_changed', { tx: tx as Tx, server: { id: server.id, tenantId: server.tenantId }, source: m, started: false, running })
  }
  await updateServer(tx, server.id, { marketRentals: next })
  return rentalRunning(server) && !rentalRunning({ ...server, marketRentals: next })
}

/**
 * The operator's or the agent's rental fact (`rental_active`, the latest write wins) is about to be
 * `active`, in the caller's transaction: when that changes it, says so (`server.rental_changed`).
 */
export async function noteRentalFact(
  tx: DbOrTx,
  deps: Pick<Deps, 'events'>,
  server: RentalFacts & { id: string; tenantId: string },
  active: boolean,
  source: 'operator' | 'agent',
): Promise<void> {
  if (server.rentalActive === active) return
  await deps.events.emit('server.rental_changed', {
    tx: tx as Tx,
    server: { id: server.id, tenantId: server.tenantId },
    source,
    started: active,
    running: rentalRunning({ ...server, rentalActive: active }),
  })
}
