/**
 * JSON-lines logging to stdout. Every line passes through `redact`, so a token that slipped into
 * a message or an error text is masked before it is written anywhere.
 */
export type Level = 'debug' | 'info' | 'warn' | 'error'
export type Logger = {
  [L in Level]: (msg: string, fields?: Record<string, unknown>) => void
}

const SECRET = /gpuhq_(init|agt|pat|mcp)_[0-9A-Za-z]+/g
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 }

/** Masks every gpuhq secret in `text` to its prefix and four characters. */
export function redact(text: string): string {
  return text.replace(SECRET, (token, kind: string) => {
    const prefix = `gpuhq_${kind}_`
    return `${prefix}${token.slice(prefix.length, prefix.length + 4)}…`
  })
}

export function createLogger(
  level: Level = 'info',
  write: (line: string) => void = (line) => process.stdout.write(line + '\n'),
  now: () => Date = () => new Date(),
): Logger {
  const emit =
    (l: Level) =>
    (msg: string, fields: Record<string, unknown> = {}) => {
      if (ORDER[l] < ORDER[level]) return
      const line = JSON.stringify({ t: now().toISOString(), level: l, msg, ...fields }, (_k, v) => (v instanceof Error ? v.message : v))
      write(redact(line))
    }
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') }
}

/** A logger that keeps lines in memory (tests, or a caller that wants to inspect them). */
export function memoryLogger(level: Level = 'debug'): Logger & { lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = []
  return Object.assign(
    createLogger(level, (line) => lines.push(JSON.parse(line))),
    { lines },
  )
}
