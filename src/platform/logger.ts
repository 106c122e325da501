/**
 * Structured JSON logs, one object per line on stdout. Anything shaped like one of our secrets is
 * masked before it is written, whatever field it hides in, so a secret never reaches a log.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent'
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 }

const SECRET = /gpuhq_(pat|init|agt|mcp)_[0-9A-Za-z]{4}[0-9A-Za-z]*/g

export function redact(text: string): string {
  return text.replace(SECRET, (m) => m.slice(0, m.indexOf('_', 6) + 5) + '…')
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void
  info(msg: string, fields?: Record<string, unknown>): void
  warn(msg: string, fields?: Record<string, unknown>): void
  error(msg: string, fields?: Record<string, unknown>): void
}

/**
 * Where a line goes: `level` lets a writer tell the lines that may wait a moment from those that
 * may not (a writer given by a test can ignore it).
 */
export type LineWriter = (line: string, level: Exclude<LogLevel, 'silent'>) => void

/** Lines held for stdout: what one turn of the event loop logged, written together. */
let held = ''
let flushQueued = false
let exitHooked = false
const HOLD_BYTES = 64 * 1024

function flushHeld(): void {
  flushQueued = false
  if (held === '') return
  const text = held
  held = ''
  process.stdout.write(text)
}

/**
 * stdout, one write per turn of the event loop instead of one per line: a write is a system call,
 * and the per-request line's call cost more than a 304's whole lookup (bench/README.md, "The log
 * line"). Debug and info lines wait for the end of the current turn (setImmediate) or 64 KiB; a
 * warning or an error is written at once, with every line held before it, in order; and what is
 * held is written when the process exits. What a kill -9 can lose is the info lines of the turn it
 * lands in, never a warning or an error.
 */
const batchedStdout: LineWriter = (line, level) => {
  held += line + '\n'
  if (RANK[level] >= RANK.warn || held.length >= HOLD_BYTES) return flushHeld()
  if (!exitHooked) {
    exitHooked = true
    process.on('exit', flushHeld)
  }
  if (!flushQueued) {
    flushQueued = true
    setImmediate(flushHeld)
  }
}

export function createLogger(level: LogLevel, now: () => string, write: LineWriter = batchedStdout): Logger {
  const emit = (lvl: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < RANK[level]) return
    const record = { time: now(), level: lvl, msg, ...fields }
    // The per-request line has only strings and numbers: the replacer (a call per value) and the
    // masking pass run only where they could change something.
    const text = fields && Object.values(fields).some(needsReplacer) ? JSON.stringify(record, errorReplacer) : JSON.stringify(record)
    write(text.includes('gpuhq_') ? redact(text) : text, lvl)
  }
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  }
}

/** An Error or a bigint, at the top or nested in an object: what errorReplacer exists for. */
function needsReplacer(value: unknown): boolean {
  return value !== null && (typeof value === 'object' || typeof value === 'bigint')
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack }
  if (typeof value === 'bigint') return value.toString()
  return value
}
