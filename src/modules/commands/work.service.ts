import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import type { FieldError } from '../../platform/problem'
import { commandType, paramsErrors } from './commands.catalogue'
import { isTerminal, sendFrame } from './commands.delivery'
import { changeCommand, findCommand, listCommandRows } from './commands.repository'

/**
 * What a workflow that waits for commands reads and does (the drain, docs/marketplaces.md "Drain"):
 * check a command before anything else is done, find the work already waiting for the rental's end,
 * read where each command stands, and cancel those the agent has not accepted yet.
 */

/** The problems of a command's type and params, each pointer under `at` (an empty list: it would be accepted). */
export function commandInputErrors(type: string, params: unknown, at: string): FieldError[] {
  if (!commandType(type)) return [{ path: `${at}/type`, code: 'unknown_command_type' }]
  return paramsErrors(type, params).map((e) => ({ ...e, path: `${at}${e.path}` }))
}

/** The server's unfinished commands that wait for the rental to end (`requires: after_rental`), oldest first. */
export async function commandsAfterRental(deps: Deps, tenantId: string, serverId: string): Promise<string[]> {
  return (await listCommandRows(deps.db, tenantId, { serverId }, 200))
    .filter((c) => c.requires === 'after_rental' && !isTerminal(c))
    .map((c) => c.id)
    .reverse()
}

export type CommandOutcome = { id: string; type: string; executionStatus: string; deliveryStatus: string; finished: boolean; error: string | null }

/** Where each command stands; a command that is gone (it never is: commands are kept) is left out. */
export async function commandOutcomes(deps: Deps, tenantId: string, ids: readonly string[]): Promise<CommandOutcome[]> {
  const out: CommandOutcome[] = []
  for (const id of ids) {
    const c = await findCommand(deps.db, tenantId, id)
    if (!c) continue
    const error = c.error ? c.error.message : c.deliveryStatus === 'delivery_failed' ? 'never delivered' : null
    out.push({ id: c.id, type: c.type, executionStatus: c.executionStatus, deliveryStatus: c.deliveryStatus, finished: isTerminal(c), error })
  }
  return out
}

/**
 * Cancels the commands of `ids` the system issued for `causeId` (a drain's own work, never a command
 * it only waited for) that the agent has not accepted yet (still queued or on their way), with
 * `note` on their timelines; one the agent already runs is left to finish. Answers how many it cancelled.
 */
export async function cancelCommandsNotStarted(deps: Deps, tenantId: string, ids: readonly string[], causeId: string, note: string): Promise<number> {
  const cancelled = await withTransaction(deps.db, async (tx) => {
    const out: { id: string; serverId: string; sent: boolean }[] = []
    const now = deps.clock.nowUs()
    for (const id of ids) {
      const c = await findCommand(tx, tenantId, id)
      if (c?.issuedByType !== 'system' || c.issuedById !== causeId || isTerminal(c) || c.deliveryStatus === 'accepted') continue
      await changeCommand(
        tx,
        deps,
        c,
        {
          executionStatus: 'cancelled',
          cancelledAt: now,
          cancelRequestedAt: now,
          finishedAt: now,
          queueReason: null,
          ...(c.deliveryStatus === 'delivery_failed' ? {} : { deliveryStatus: c.deliveryStatus }),
        },
        note,
      )
      out.push({ id: c.id, serverId: c.serverId, sent: c.deliveryStatus === 'sent' || c.deliveryStatus === 'routing' })
    }
    return out
  })
  // One already on its way to the agent is told to stop too, as POST /commands/{id}/cancel does.
  for (const c of cancelled) if (c.sent) sendFrame(deps, c.serverId, { type: 'command.cancel', command_id: c.id })
  return cancelled.length
}
