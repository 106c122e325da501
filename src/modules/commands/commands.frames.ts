import {
  checkAgentFrame,
  checkCommandError,
  checkCommandReportHead,
  type CommandError,
  type CommandReport,
  type CommandReportType,
  type ServiceFrame,
} from '#protocol'

/**
 * The command frames of the agent session (docs/commands.md), both ways, as the protocol defines
 * them (protocol/agent.ts, the one source the reference agent reads too).
 * Service → agent: `command` and `command.cancel`. Agent → service: the command.* reports, each
 * checked by the protocol's compiled checker; a report that fails answers one fixed message per
 * type, the words the agent has always seen.
 */
export type OutgoingCommandFrame = ServiceFrame<'command' | 'command.cancel'>
export type ReportedError = CommandError

const REFUSED: Record<CommandReportType, string> = {
  'command.accepted': 'command_id is required',
  'command.started': 'command_id is required',
  'command.progress': 'progress must be an integer 0..100',
  'command.log': 'text must be a string',
  'command.finished': 'status must be succeeded or failed',
}

export const checkReport = checkCommandReportHead
export const checkError = checkCommandError

/** The report typed, or why it is refused: `unknown_type` for a command.* type we do not know. */
export function readReport(frame: { type: string; command_id: string }): { ok: true; report: CommandReport } | { ok: false; code: string; message: string } {
  if (!Object.hasOwn(REFUSED, frame.type)) return { ok: false, code: 'unknown_type', message: `unknown frame type ${frame.type.slice(0, 64)}` }
  const type = frame.type as CommandReportType
  if (!checkAgentFrame[type].Check(frame)) return { ok: false, code: 'validation_failed', message: REFUSED[type] }
  return { ok: true, report: frame as CommandReport }
}
