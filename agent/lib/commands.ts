import type { AgentFrame, ServiceFrame } from '#protocol'
import type { FinishedCommands, FinishedFrame } from './command-store'
import type { Logger } from './log'
import { redact } from './log'
import { COMMAND_SCHEMA_VERSION } from './version'

/**
 * Runs commands delivered on the session, one at a time in arrival order (two nvidia-smi power
 * changes never race). Every command answers accepted → started → progress/log → finished; a
 * command id seen before is answered again, never executed again.
 */

/** A `command` frame as the runner takes it (protocol/agent.ts); what it lacks gets the protocol's defaults. */
export type CommandFrame = Pick<ServiceFrame<'command'>, 'command_id' | 'command_type'> &
  Partial<Omit<ServiceFrame<'command'>, 'type' | 'command_id' | 'command_type'>>

export type CommandErrorBody = { code: string; message: string; retryable: boolean; stage?: string; details?: Record<string, unknown> }

export class CommandFailure extends Error {
  constructor(readonly body: CommandErrorBody) {
    super(body.message)
  }
}

export type CommandContext = {
  params: Record<string, unknown>
  signal: AbortSignal
  log: (text: string) => void
  progress: (pct: number) => void
}

/** `after` runs once the finished frame has left (a reboot cannot report afterwards). */
type Outcome = { result?: Record<string, unknown>; after?: () => Promise<void> | void }
export type Handler = (ctx: CommandContext) => Promise<Outcome>

type Pending = { frame: CommandFrame; controller: AbortController; cancelled: 'cancelled' | 'deadline_exceeded' | null }

const MAX_LOG_LINES = 200
const MAX_LOG_CHARS = 2000

export class CommandRunner {
  private readonly queue: Pending[] = []
  private current: Pending | null = null
  private draining: Promise<void> = Promise.resolve()
  private running = false

  constructor(
    private readonly deps: {
      handlers: Record<string, Handler>
      finished: FinishedCommands
      emit: (frame: AgentFrame) => void
      /** Resolves once everything emitted so far has been handed to the socket (or gave up). */
      flush: () => Promise<void>
      log: Logger
      now?: () => number
    },
  ) {}

  receive(frame: CommandFrame): void {
    const id = frame.command_id
    const done = this.deps.finished.get(id)
    if (done) {
      this.deps.log.info('command delivered again after it finished; answering, not running it again', { command_id: id })
      this.deps.emit({ type: 'command.accepted', command_id: id })
      this.deps.emit(done)
      return
    }
    if (this.current?.frame.command_id === id || this.queue.some((p) => p.frame.command_id === id)) {
      this.deps.emit({ type: 'command.accepted', command_id: id })
      return
    }
    this.deps.log.info('command received', { command_id: id, command_type: frame.command_type, requires: frame.requires })
    this.deps.emit({ type: 'command.accepted', command_id: id })
    this.queue.push({ frame, controller: new AbortController(), cancelled: null })
    if (!this.running) this.draining = this.drain()
  }

  /** Best effort: a queued command never starts; a running one is aborted if its step can be. */
  cancel(id: string): void {
    const i = this.queue.findIndex((p) => p.frame.command_id === id)
    if (i >= 0) {
      const [p] = this.queue.splice(i, 1)
      this.deps.log.info('command cancelled before it started', { command_id: id })
      this.finish(p!, 'failed', undefined, cancelledError('cancelled'))
      return
    }
    if (this.current?.frame.command_id === id) {
      this.deps.log.info('cancelling the running command', { command_id: id })
      this.current.cancelled = 'cancelled'
      this.current.controller.abort()
      return
    }
    this.deps.log.info('cancel for a command that is not pending here; ignored', { command_id: id })
  }

  /** Resolves when nothing is queued or running (tests; a clean shutdown). */
  idle(): Promise<void> {
    return this.draining
  }

  private async drain(): Promise<void> {
    this.running = true
    try {
      for (let p = this.queue.shift(); p; p = this.queue.shift()) {
        this.current = p
        await this.execute(p)
        this.current = null
      }
    } finally {
      this.running = false
    }
  }

  private async execute(p: Pending): Promise<void> {
    const { frame } = p
    const id = frame.command_id
    const now = this.deps.now ?? Date.now
    const deadline = frame.deadline ? Date.parse(frame.deadline) : NaN
    if (Number.isFinite(deadline) && deadline <= now()) return this.finish(p, 'failed', undefined, cancelledError('deadline_exceeded'))
    if ((frame.schema_version ?? 1) > COMMAND_SCHEMA_VERSION)
      return this.finish(p, 'failed', undefined, {
        code: 'unsupported_schema_version',
        message: `this agent understands command schema version ${COMMAND_SCHEMA_VERSION}, not ${frame.schema_version}`,
        retryable: false,
      })
    const handler = Object.hasOwn(this.deps.handlers, frame.command_type) ? this.deps.handlers[frame.command_type] : undefined
    if (!handler)
      return this.finish(p, 'failed', undefined, {
        code: 'unknown_command_type',
        message: `this agent does not know the command type ${String(frame.command_type).slice(0, 64)}`,
        retryable: false,
      })
    let timer: ReturnType<typeof setTimeout> | undefined
    if (Number.isFinite(deadline))
      timer = setTimeout(
        () => {
          p.cancelled = 'deadline_exceeded'
          p.controller.abort()
        },
        Math.min(deadline - now(), 2 ** 31 - 1),
      )
    this.deps.emit({ type: 'command.started', command_id: id })
    let lines = 0
    const ctx: CommandContext = {
      params: frame.params && typeof frame.params === 'object' ? frame.params : {},
      signal: p.controller.signal,
      log: (text) => {
        if (++lines > MAX_LOG_LINES) return
        this.deps.emit({ type: 'command.log', command_id: id, text: redact(text).slice(0, MAX_LOG_CHARS) })
      },
      progress: (pct) => this.deps.emit({ type: 'command.progress', command_id: id, progress: Math.round(Math.min(100, Math.max(0, pct))) }),
    }
    try {
      const outcome = await handler(ctx)
      clearTimeout(timer)
      this.finish(p, 'succeeded', outcome.result ?? {})
      if (outcome.after) {
        await this.deps.flush()
        await outcome.after()
      }
    } catch (err) {
      clearTimeout(timer)
      if (p.cancelled) return this.finish(p, 'failed', undefined, cancelledError(p.cancelled))
      if (err instanceof CommandFailure) return this.finish(p, 'failed', undefined, err.body)
      this.deps.log.error('command failed unexpectedly', { command_id: id, error: String(err) })
      this.finish(p, 'failed', undefined, { code: 'agent_error', message: 'the agent failed while running the command', retryable: true })
    }
  }

  private finish(p: Pending, status: 'succeeded' | 'failed', result?: Record<string, unknown>, error?: CommandErrorBody): void {
    const frame: FinishedFrame = {
      type: 'command.finished',
      command_id: p.frame.command_id,
      status,
      ...(result !== undefined ? { result } : {}),
      ...(error ? { error: { ...error, message: redact(error.message).slice(0, 1024) } } : {}),
    }
    this.deps.finished.add(frame)
    this.deps.emit(frame)
    this.deps.log.info('command finished', { command_id: p.frame.command_id, status, code: error?.code })
  }
}

function cancelledError(code: 'cancelled' | 'deadline_exceeded'): CommandErrorBody {
  return code === 'cancelled'
    ? { code, message: 'the command was cancelled', retryable: false }
    : { code, message: 'the command reached its deadline before it finished', retryable: false }
}
