import { Type, type Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Nullable, Timestamp, Uuid } from '../../platform/schemas'

/**
 * The command frames of the agent session (docs/commands.md), both ways.
 * Service → agent: `command` and `command.cancel`. Agent → service: the command.* reports, each
 * checked by a compiled validator; a report that fails answers one fixed message per type, the
 * words the agent has always seen.
 */
const CommandId = Type.String({ maxLength: 64 })

const CommandFrame = Type.Object({
  type: Type.Literal('command'),
  command_id: Uuid(),
  command_type: Type.String(),
  schema_version: Type.Integer({ minimum: 1 }),
  params: Type.Record(Type.String(), Type.Unknown()),
  requires: Type.Union([Type.Literal('none'), Type.Literal('idle'), Type.Literal('after_rental')]),
  deadline: Nullable(Timestamp()),
})
const CancelFrame = Type.Object({ type: Type.Literal('command.cancel'), command_id: Uuid() })
export type OutgoingCommandFrame = Static<typeof CommandFrame> | Static<typeof CancelFrame>

/** What every report carries: the command it is about. */
const Report = Type.Object({ type: Type.String(), command_id: CommandId })

/** The error object of a failed command: code, message and retryable; stage and details are kept when usable. */
const ReportedError = Type.Object({
  code: Type.String({ pattern: '^[a-z][a-z0-9_]{1,63}$' }),
  message: Type.String(),
  retryable: Type.Boolean(),
  stage: Type.Optional(Type.Unknown()),
  details: Type.Optional(Type.Unknown()),
})
export type ReportedError = Static<typeof ReportedError>

const reports = {
  'command.accepted': Type.Object({ type: Type.Literal('command.accepted'), command_id: CommandId }),
  'command.started': Type.Object({ type: Type.Literal('command.started'), command_id: CommandId }),
  'command.progress': Type.Object({ type: Type.Literal('command.progress'), command_id: CommandId, progress: Type.Integer({ minimum: 0, maximum: 100 }) }),
  'command.log': Type.Object({ type: Type.Literal('command.log'), command_id: CommandId, text: Type.String() }),
  'command.finished': Type.Object({
    type: Type.Literal('command.finished'),
    command_id: CommandId,
    status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
    result: Type.Optional(Type.Unknown()),
    error: Type.Optional(Type.Unknown()),
  }),
}
export type CommandReport = { [K in keyof typeof reports]: Static<(typeof reports)[K]> }[keyof typeof reports]

const REFUSED: Record<keyof typeof reports, string> = {
  'command.accepted': 'command_id is required',
  'command.started': 'command_id is required',
  'command.progress': 'progress must be an integer 0..100',
  'command.log': 'text must be a string',
  'command.finished': 'status must be succeeded or failed',
}

export const checkReport = TypeCompiler.Compile(Report)
export const checkError = TypeCompiler.Compile(ReportedError)
const checks = Object.fromEntries(Object.entries(reports).map(([type, schema]) => [type, TypeCompiler.Compile(schema)]))

/** The report typed, or why it is refused: `unknown_type` for a command.* type we do not know. */
export function readReport(frame: Static<typeof Report>): { ok: true; report: CommandReport } | { ok: false; code: string; message: string } {
  const check = checks[frame.type]
  if (!check) return { ok: false, code: 'unknown_type', message: `unknown frame type ${frame.type.slice(0, 64)}` }
  if (!check.Check(frame)) return { ok: false, code: 'validation_failed', message: REFUSED[frame.type as keyof typeof reports] }
  return { ok: true, report: frame as CommandReport }
}
