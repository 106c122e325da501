import { isDatabaseBusy, notifyOthers, onNotice, withTransaction, type Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { TenantWalk } from '../../platform/jobs'
import { formatNullableTimestamp } from '../../platform/time'
import { agentSessions, rentalRunning, trustedServerById } from '../fleet'
import { changeCommand, hasUndelivered, pastAcceptBy, pastDeadline, TERMINAL, undeliveredFor, type CommandRow } from './commands.repository'
import type { OutgoingCommandFrame } from './commands.frames'

/**
 * Delivery of commands over the agent's session.
 *
 * Delivery axis: queued → routing → sent → accepted, or delivery_failed once accept_by passes.
 * A command waits (queued, with a queue_reason) while its server is offline (`server_offline`),
 * while its `requires` is not met (`awaiting_idle`, `awaiting_rental_end`), or after a session
 * dropped before the agent accepted it (`awaiting_retry`: it is sent again when the agent is back).
 * Execution axis: not_started → running → succeeded / failed, cancelled, or expired at `deadline`.
 * What the agent reports back is commands.reports.ts.
 */
export function isTerminal(c: Pick<CommandRow, 'executionStatus'>): boolean {
  return (TERMINAL as readonly string[]).includes(c.executionStatus)
}

/** Why a deliverable-looking command must still wait, or null when it may go now. */
export function waitReason(c: CommandRow, server: Parameters<typeof rentalRunning>[0], online: boolean): string | null {
  const rented = rentalRunning(server)
  if (c.requires === 'idle' && rented) return 'awaiting_idle'
  if (c.requires === 'after_rental' && rented) return 'awaiting_rental_end'
  if (!online) return c.queueReason === 'awaiting_retry' ? 'awaiting_retry' : 'server_offline'
  return null
}

/** Sends a frame over the server's live session in this process; false when there is none. */
export function sendFrame(deps: Deps, serverId: string, frame: OutgoingCommandFrame): boolean {
  return agentSessions(deps).send(serverId, frame)
}

/**
 * The channel on which an instance says "this server has a command that may go now" (PostgreSQL
 * NOTIFY, payload the server id): the instance holding the agent's session delivers it.
 */
export const COMMANDS_CHANNEL = 'gpuhq_commands'

/**
 * Listens for commands created, or made deliverable, by any instance on the same database and
 * delivers those whose agent is connected here. Registered once per process (src/reactions.ts);
 * on SQLite it does nothing.
 */
export function deliverAcrossInstances(deps: Deps): () => void {
  return onNotice(deps.database, COMMANDS_CHANNEL, async (serverId) => {
    if (!agentSessions(deps).isLive(serverId)) return
    try {
      await dispatchServer(deps, serverId)
    } catch (error) {
      // The next announcement, the session's next start or commands.expire delivers it.
      deps.log.warn('delivering a command announced by another instance failed', { server_id: serverId, error })
    }
  })
}

/** Tells the instance holding this server's session, wherever it is, to deliver what may go now. */
export async function announceDeliverable(deps: Deps, serverId: string): Promise<void> {
  await notifyOthers(deps.db, COMMANDS_CHANNEL, serverId)
}

/**
 * Sends every command of the server that may go now over its live session in this process. The
 * commands are marked sent in one transaction and their frames go out after it commits, never
 * from inside it: on PostgreSQL a transaction that lost a conflict runs again (db/pg/pool.ts),
 * and a frame sent by an attempt that rolled back would reach the agent twice. The transaction
 * awaits the database, so the session may change meanwhile: the frames go to whichever session is
 * the server's live one after the commit (a new session's hello sends what was left unaccepted
 * again, and the agent accepts a command id it already has once: docs/agent.md "Commands");
 * should the send find none, the commands go back to the queue as after any lost session.
 */
export async function dispatchServer(deps: Deps, serverId: string): Promise<number> {
  if (!(await hasUndelivered(deps.db, serverId))) return 0 // nothing waits: no transaction
  const online = agentSessions(deps).isLive(serverId)
  const frames: OutgoingCommandFrame[] = []
  const now = deps.clock.nowUs()
  await withTransaction(deps.db, async (tx) => {
    frames.length = 0 // a PostgreSQL retry starts over
    const server = await trustedServerById(tx, serverId)
    if (!server) return
    for (const c of await undeliveredFor(tx, serverId)) {
      // Sent ones wait for the agent's answer; they go again only after the session is lost.
      if (c.deliveryStatus !== 'queued') continue
      if (c.acceptBy !== null && c.acceptBy <= now) continue // commands.expire marks it delivery_failed
      const reason = waitReason(c, server, online)
      if (reason) {
        if (c.queueReason !== reason) await changeCommand(tx, deps, c, { deliveryStatus: 'queued', queueReason: reason })
        continue
      }
      const retry = c.queueReason === 'awaiting_retry'
      const routing = await changeCommand(tx, deps, c, { deliveryStatus: 'routing', queueReason: null })
      await changeCommand(
        tx,
        deps,
        routing,
        { deliveryStatus: 'sent', queueReason: null, sentAt: deps.clock.nowUs(), sendCount: routing.sendCount + 1 },
        retry ? 're-sent after reconnect' : undefined,
      )
      frames.push({
        type: 'command',
        command_id: c.id,
        command_type: c.type,
        schema_version: c.schemaVersion,
        params: c.params,
        requires: c.requires,
        deadline: formatNullableTimestamp(c.deadline),
      })
    }
  })
  let sent = 0
  for (const frame of frames) {
    if (!sendFrame(deps, serverId, frame)) {
      await sessionLost(deps, serverId)
      return sent
    }
    sent++
  }
  return sent
}

/** A new session said hello: whatever an earlier session left unaccepted goes again, then the queue. */
export async function sessionReady(deps: Deps, serverId: string): Promise<number> {
  await sessionLost(deps, serverId)
  return dispatchServer(deps, serverId)
}

/** The session dropped: what was sent but not accepted goes back to the queue to be sent again. */
export async function sessionLost(deps: Deps, serverId: string): Promise<void> {
  if (!(await hasUndelivered(deps.db, serverId))) return // nothing was in flight: no transaction
  await withTransaction(deps.db, async (tx) => {
    for (const c of await undeliveredFor(tx, serverId))
      if (c.deliveryStatus === 'routing' || c.deliveryStatus === 'sent')
        await changeCommand(tx, deps, c, { deliveryStatus: 'queued', queueReason: 'awaiting_retry' })
  })
}

/**
 * The `commands.expire` job: undelivered commands past accept_by → delivery_failed; unfinished
 * ones past deadline → expired; then anything waiting on a server with a live session here is sent.
 * Each command's change (and what reacts to it) is its own part of the job's per-tenant error
 * boundary, scoped by command (a savepoint each when the plain transaction fails): one that throws
 * keeps its state, is reported and waits out a backoff; the others change.
 */
export async function expireCommands(deps: Deps, tenants: TenantWalk = new TenantWalk(deps, 'commands.expire')): Promise<string> {
  const now = deps.clock.nowUs()
  /** Every change in the caller's transaction: plainly, or (careful) each in its own savepoint and boundary. */
  const changeAll = async (tx: Tx, careful: boolean) => {
    const counts = { failed: 0, expired: 0, deferred: 0 }
    const each = async (c: CommandRow, change: (one: Tx) => Promise<unknown>): Promise<boolean> => {
      const scope = `command ${c.id}`
      if (tenants.isWaiting(c.tenantId, scope)) {
        counts.deferred++
        return false
      }
      const run = async (one: Tx) => {
        await change(one)
        return true
      }
      return careful ? (await tenants.run(c.tenantId, () => withTransaction(tx, run), scope)) === true : await run(tx)
    }
    for (const c of await pastAcceptBy(tx, now))
      if (
        await each(c, (one) =>
          changeCommand(one, deps, c, { deliveryStatus: 'delivery_failed', queueReason: null }, 'accept_by passed before the agent accepted it'),
        )
      )
        counts.failed++
    for (const c of await pastDeadline(tx, now))
      if (await each(c, (one) => changeCommand(one, deps, c, { executionStatus: 'expired', finishedAt: now }, 'deadline passed before it finished')))
        counts.expired++
    return counts
  }
  // Optimistic first: one plain transaction. When some command's change throws, it is rolled back
  // whole and done again carefully.
  let counts: Awaited<ReturnType<typeof changeAll>>
  try {
    counts = await withTransaction(deps.db, (tx) => changeAll(tx, false))
  } catch (e) {
    if (isDatabaseBusy(e)) throw e
    counts = await withTransaction(deps.db, (tx) => changeAll(tx, true))
  }
  tenants.deferred += counts.deferred
  const { failed, expired } = counts
  let sent = 0
  for (const serverId of agentSessions(deps).serverIds()) sent += await dispatchServer(deps, serverId)
  return `${failed} delivery_failed, ${expired} expired, ${sent} sent`
}
