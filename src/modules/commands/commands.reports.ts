import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { isTerminal } from './commands.delivery'
import { checkError, checkReport, readReport, type ReportedError } from './commands.frames'
import { changeCommand, findLog, findServerCommand, insertLog, updateLog, type CommandRow } from './commands.repository'
import { boundedDetails, redactText } from './redact'

/** What the agent reports about its commands (command.* frames), applied to the command and its log. */
const LOG_LIMIT_BYTES = 64 * 1024
/** A result whose JSON reaches this size is not kept. */
const RESULT_LIMIT_CHARS = 64 * 1024

type FrameOutcome = { ok: true } | { ok: false; code: string; message: string }

/** Applies a command.* frame from a server's agent. Frames about another server's command are unknown. */
export async function applyCommandFrame(deps: Deps, serverId: string, frame: { type: string }): Promise<FrameOutcome> {
  if (!checkReport.Check(frame)) return { ok: false, code: 'validation_failed', message: 'command_id is required' }
  const id = frame.command_id.toLowerCase()
  return withTransaction(deps.db, async (tx): Promise<FrameOutcome> => {
    const c = await findServerCommand(tx, serverId, id)
    if (!c) return { ok: false, code: 'not_found', message: `no command ${id} for this server` }
    const read = readReport(frame)
    if (!read.ok) return read
    const report = read.report
    const now = deps.clock.nowUs()
    // A terminal command (cancelled before the agent accepted it, expired) never moves again.
    const accept = async (cmd: CommandRow) =>
      cmd.deliveryStatus === 'accepted' || cmd.deliveryStatus === 'delivery_failed' || isTerminal(cmd)
        ? cmd
        : await changeCommand(tx, deps, cmd, { deliveryStatus: 'accepted', queueReason: null, acceptedAt: now })
    switch (report.type) {
      case 'command.accepted':
        await accept(c)
        return { ok: true }
      case 'command.started': {
        const a = await accept(c)
        if (a.executionStatus === 'not_started') await changeCommand(tx, deps, a, { executionStatus: 'running', startedAt: now })
        return { ok: true }
      }
      case 'command.progress': {
        let a = await accept(c)
        if (isTerminal(a)) return { ok: true }
        if (a.executionStatus === 'not_started') a = await changeCommand(tx, deps, a, { executionStatus: 'running', startedAt: now })
        await changeCommand(tx, deps, a, { progress: report.progress })
        return { ok: true }
      }
      case 'command.log':
        await appendLog(tx, deps, c, report.text)
        return { ok: true }
      case 'command.finished': {
        const error = report.status === 'failed' ? normalizeError(report.error) : null
        if (report.status === 'failed' && !error)
          return { ok: false, code: 'validation_failed', message: 'a failed command needs an error object with code, message and retryable' }
        const a = await accept(c)
        if (isTerminal(a)) return { ok: true } // a late or repeated report never moves a terminal command
        const cancelled = error?.code === 'cancelled' && a.cancelRequestedAt !== null
        const result = report.status === 'succeeded' ? keptResult(report.result) : null
        await changeCommand(tx, deps, a, {
          executionStatus: cancelled ? 'cancelled' : report.status,
          finishedAt: now,
          ...(cancelled ? { cancelledAt: now } : {}),
          progress: report.status === 'succeeded' ? 100 : a.progress,
          result,
          error,
        })
        return { ok: true }
      }
    }
  })
}

/** A result object whose JSON stays under the limit; anything else is not kept. */
function keptResult(result: unknown): Record<string, unknown> | null {
  if (!result || typeof result !== 'object' || Array.isArray(result)) return null
  return JSON.stringify(result).length < RESULT_LIMIT_CHARS ? (result as Record<string, unknown>) : null
}

/** The command error object: code, message ≤1024, retryable, stage, small details; secrets masked. */
function normalizeError(e: unknown) {
  if (!checkError.Check(e)) return null
  const o: ReportedError = e
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

async function appendLog(tx: DbOrTx, deps: Deps, c: CommandRow, text: string): Promise<void> {
  const clean = redactText(text.replace(/\r\n?/g, '\n'))
  const line = clean.endsWith('\n') ? clean : `${clean}\n`
  const log = await findLog(tx, c.id)
  const now = deps.clock.nowUs()
  if (!log) {
    const bytes = Buffer.byteLength(line)
    const truncated = bytes > LOG_LIMIT_BYTES
    const kept = truncated ? utf8Prefix(Buffer.from(line), LOG_LIMIT_BYTES) : line
    await insertLog(tx, { id: deps.newId(), commandId: c.id, text: kept, bytes: Buffer.byteLength(kept), truncated, updatedAt: now })
    return
  }
  if (log.truncated) return
  const room = LOG_LIMIT_BYTES - log.bytes
  const add = Buffer.from(line)
  const keep = add.byteLength > room ? utf8Prefix(add, room) : line
  await updateLog(tx, log.id, { text: log.text + keep, bytes: log.bytes + Buffer.byteLength(keep), truncated: add.byteLength > room, updatedAt: now })
}
