import { and, eq, inArray, lt, notInArray } from 'drizzle-orm'
import { commandLogs, commands, servers } from '../../../db/schema'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { agentSessions } from '../agent/agent.ws'
import { boundedDetails, redactText } from './redact'
import { formatNullableTimestamp } from '../../platform/time'
import { changeCommand, findLog, findServerCommand, undeliveredFor, type CommandRow } from './commands.repository'

/**
 * Delivery of commands over the agent's session, and what the agent reports back.
 *
 * Delivery axis: queued → routing → sent → accepted, or delivery_failed once accept_by passes.
 * A command waits (queued, with a queue_reason) while its server is offline (`server_offline`),
 * while its `requires` is not met (`awaiting_idle`, `awaiting_rental_end`), or after a session
 * dropped before the agent accepted it (`awaiting_retry`: it is sent again when the agent is back).
 * Execution axis: not_started → running → succeeded / failed, cancelled, or expired at `deadline`.
 */
export const LOG_LIMIT_BYTES = 64 * 1024
const TERMINAL = ['succeeded', 'failed', 'cancelled', 'expired'] as const

export function isTerminal(c: Pick<CommandRow, 'executionStatus'>): boolean {
  return (TERMINAL as readonly string[]).includes(c.executionStatus)
}

/** Why a deliverable-looking command must still wait, or null when it may go now. */
export function waitReason(c: CommandRow, server: { rentalActive: boolean }, online: boolean): string | null {
  if (c.requires === 'idle' && server.rentalActive) return 'awaiting_idle'
  if (c.requires === 'after_rental' && server.rentalActive) return 'awaiting_rental_end'
  if (!online) return c.queueReason === 'awaiting_retry' ? 'awaiting_retry' : 'server_offline'
  return null
}

/** Sends every command of the server that may go now over its live session in this process. */
export function dispatchServer(deps: Deps, serverId: string): number {
  const sessions = agentSessions(deps)
  const online = sessions.sockets.has(serverId)
  let sent = 0
  const now = deps.clock.nowUs()
  withTransaction(deps.db, (tx) => {
    const server = tx.select({ rentalActive: servers.rentalActive }).from(servers).where(eq(servers.id, serverId)).get()
    if (!server) return
    for (const c of undeliveredFor(tx, serverId)) {
      // Sent ones wait for the agent's answer; they go again only after the session is lost.
      if (c.deliveryStatus !== 'queued') continue
      if (c.acceptBy !== null && c.acceptBy <= now) continue // commands.expire marks it delivery_failed
      const reason = waitReason(c, server, online)
      if (reason) {
        if (c.deliveryStatus !== 'queued' || c.queueReason !== reason) changeCommand(tx, deps, c, { deliveryStatus: 'queued', queueReason: reason })
        continue
      }
      const retry = c.queueReason === 'awaiting_retry'
      const routing = changeCommand(tx, deps, c, { deliveryStatus: 'routing', queueReason: null })
      const ok = sessions.send(serverId, {
        type: 'command',
        command_id: c.id,
        command_type: c.type,
        schema_version: c.schemaVersion,
        params: JSON.parse(c.params),
        requires: c.requires,
        deadline: formatNullableTimestamp(c.deadline),
      })
      if (!ok) {
        changeCommand(tx, deps, routing, { deliveryStatus: 'queued', queueReason: 'server_offline' })
        continue
      }
      changeCommand(
        tx,
        deps,
        routing,
        { deliveryStatus: 'sent', queueReason: null, sentAt: deps.clock.nowUs(), sendCount: routing.sendCount + 1 },
        retry ? 're-sent after reconnect' : undefined,
      )
      sent++
    }
  })
  return sent
}

/** A new session said hello: whatever an earlier session left unaccepted goes again, then the queue. */
export function sessionReady(deps: Deps, serverId: string): number {
  sessionLost(deps, serverId)
  return dispatchServer(deps, serverId)
}

/** The session dropped: what was sent but not accepted goes back to the queue to be sent again. */
export function sessionLost(deps: Deps, serverId: string): void {
  withTransaction(deps.db, (tx) => {
    for (const c of undeliveredFor(tx, serverId))
      if (c.deliveryStatus === 'routing' || c.deliveryStatus === 'sent') changeCommand(tx, deps, c, { deliveryStatus: 'queued', queueReason: 'awaiting_retry' })
  })
}

type Frame = { type: string; command_id?: unknown; progress?: unknown; text?: unknown; status?: unknown; result?: unknown; error?: unknown }
export type FrameOutcome = { ok: true } | { ok: false; code: string; message: string }

const ERROR_CODE = /^[a-z][a-z0-9_]{1,63}$/

/** Applies a command.* frame from a server's agent. Frames about another server's command are unknown. */
export function applyCommandFrame(deps: Deps, serverId: string, frame: Frame): FrameOutcome {
  if (typeof frame.command_id !== 'string' || frame.command_id.length > 64) return { ok: false, code: 'validation_failed', message: 'command_id is required' }
  const id = frame.command_id.toLowerCase()
  return withTransaction(deps.db, (tx): FrameOutcome => {
    const c = findServerCommand(tx, serverId, id)
    if (!c) return { ok: false, code: 'not_found', message: `no command ${id} for this server` }
    const now = deps.clock.nowUs()
    // A terminal command (cancelled before the agent accepted it, expired) never moves again.
    const accept = (cmd: CommandRow) =>
      cmd.deliveryStatus === 'accepted' || cmd.deliveryStatus === 'delivery_failed' || isTerminal(cmd)
        ? cmd
        : changeCommand(tx, deps, cmd, { deliveryStatus: 'accepted', queueReason: null, acceptedAt: now })
    switch (frame.type) {
      case 'command.accepted':
        accept(c)
        return { ok: true }
      case 'command.started': {
        const a = accept(c)
        if (a.executionStatus === 'not_started') changeCommand(tx, deps, a, { executionStatus: 'running', startedAt: now })
        return { ok: true }
      }
      case 'command.progress': {
        if (typeof frame.progress !== 'number' || !Number.isInteger(frame.progress) || frame.progress < 0 || frame.progress > 100)
          return { ok: false, code: 'validation_failed', message: 'progress must be an integer 0..100' }
        let a = accept(c)
        if (isTerminal(a)) return { ok: true }
        if (a.executionStatus === 'not_started') a = changeCommand(tx, deps, a, { executionStatus: 'running', startedAt: now })
        changeCommand(tx, deps, a, { progress: frame.progress })
        return { ok: true }
      }
      case 'command.log': {
        if (typeof frame.text !== 'string') return { ok: false, code: 'validation_failed', message: 'text must be a string' }
        appendLog(tx, deps, c, frame.text)
        return { ok: true }
      }
      case 'command.finished': {
        if (frame.status !== 'succeeded' && frame.status !== 'failed')
          return { ok: false, code: 'validation_failed', message: 'status must be succeeded or failed' }
        const error = frame.status === 'failed' ? normalizeError(frame.error) : null
        if (frame.status === 'failed' && !error)
          return { ok: false, code: 'validation_failed', message: 'a failed command needs an error object with code, message and retryable' }
        const a = accept(c)
        if (isTerminal(a)) return { ok: true } // a late or repeated report never moves a terminal command
        const cancelled = error?.code === 'cancelled' && a.cancelRequestedAt !== null
        const result =
          frame.status === 'succeeded' && frame.result && typeof frame.result === 'object' && !Array.isArray(frame.result)
            ? JSON.stringify(frame.result).slice(0, 64 * 1024)
            : null
        changeCommand(tx, deps, a, {
          executionStatus: cancelled ? 'cancelled' : frame.status,
          finishedAt: now,
          ...(cancelled ? { cancelledAt: now } : {}),
          progress: frame.status === 'succeeded' ? 100 : a.progress,
          result: result && result.length < 64 * 1024 ? result : null,
          error: error ? JSON.stringify(error) : null,
        })
        return { ok: true }
      }
      default:
        return { ok: false, code: 'unknown_type', message: `unknown frame type ${frame.type.slice(0, 64)}` }
    }
  })
}

/** The command error object: code, message ≤1024, retryable, stage, small details; secrets masked. */
export function normalizeError(e: unknown) {
  if (!e || typeof e !== 'object' || Array.isArray(e)) return null
  const o = e as Record<string, unknown>
  if (typeof o.code !== 'string' || !ERROR_CODE.test(o.code) || typeof o.message !== 'string' || typeof o.retryable !== 'boolean') return null
  return {
    code: o.code,
    message: redactText(o.message).slice(0, 1024),
    retryable: o.retryable,
    stage: typeof o.stage === 'string' ? o.stage.slice(0, 64) : null,
    details: boundedDetails(o.details),
  }
}

/** The longest prefix of `b` of at most `max` bytes that ends on a character boundary (no U+FFFD from a split character). */
function utf8Prefix(b: Buffer, max: number): string {
  let end = Math.min(max, b.byteLength)
  while (end > 0 && end < b.byteLength && (b[end]! & 0xc0) === 0x80) end--
  return b.subarray(0, end).toString()
}

function appendLog(tx: DbOrTx, deps: Deps, c: CommandRow, text: string): void {
  const clean = redactText(text.replace(/\r\n?/g, '\n'))
  const line = clean.endsWith('\n') ? clean : `${clean}\n`
  const log = findLog(tx, c.id)
  const now = deps.clock.nowUs()
  if (!log) {
    const bytes = Buffer.byteLength(line)
    const truncated = bytes > LOG_LIMIT_BYTES
    const kept = truncated ? utf8Prefix(Buffer.from(line), LOG_LIMIT_BYTES) : line
    tx.insert(commandLogs)
      .values({ id: deps.newId(), commandId: c.id, text: kept, bytes: Buffer.byteLength(kept), truncated, updatedAt: now })
      .run()
    return
  }
  if (log.truncated) return
  const room = LOG_LIMIT_BYTES - log.bytes
  const add = Buffer.from(line)
  const keep = add.byteLength > room ? utf8Prefix(add, room) : line
  tx.update(commandLogs)
    .set({ text: log.text + keep, bytes: log.bytes + Buffer.byteLength(keep), truncated: add.byteLength > room, updatedAt: now })
    .where(eq(commandLogs.id, log.id))
    .run()
}

/**
 * The `commands.expire` job: undelivered commands past accept_by → delivery_failed; unfinished
 * ones past deadline → expired; then anything waiting on a server with a live session here is sent.
 */
export function expireCommands(deps: Deps): string {
  const now = deps.clock.nowUs()
  let failed = 0
  let expired = 0
  withTransaction(deps.db, (tx) => {
    const late = tx
      .select()
      .from(commands)
      .where(and(inArray(commands.deliveryStatus, ['queued', 'routing', 'sent']), lt(commands.acceptBy, now), eq(commands.executionStatus, 'not_started')))
      .all()
    for (const c of late) {
      changeCommand(tx, deps, c, { deliveryStatus: 'delivery_failed', queueReason: null }, 'accept_by passed before the agent accepted it')
      failed++
    }
    const overdue = tx
      .select()
      .from(commands)
      .where(and(notInArray(commands.executionStatus, [...TERMINAL]), lt(commands.deadline, now)))
      .all()
    for (const c of overdue) {
      changeCommand(tx, deps, c, { executionStatus: 'expired', finishedAt: now }, 'deadline passed before it finished')
      expired++
    }
  })
  let sent = 0
  for (const serverId of agentSessions(deps).sockets.keys()) sent += dispatchServer(deps, serverId)
  return `${failed} delivery_failed, ${expired} expired, ${sent} sent`
}
