/**
 * Command-line parsing. Secrets never travel as arguments: anything in argv is visible to every
 * user of the host (ps, /proc/<pid>/cmdline) and lands in shell history, so a token-looking
 * option or value is refused outright.
 */
export class UsageError extends Error {}

export type Parsed = { command: string; options: Record<string, string | true> }

const SECRET_OPTIONS = new Set(['token', 'init-token', 'agent-token', 'credential'])
const SECRET_VALUE = /gpuhq_(init|agt|pat|mcp)_/

const TOKEN_ARGV_REFUSAL =
  'refusing to take a token on the command line: arguments are visible to every user of this host (ps, /proc/<pid>/cmdline) and stay in shell history. ' +
  'Put the init token in a file only root can read and pass --token-file <path>, or pipe it in with --token-stdin.'

/** `flags` are options that take no value; every other option takes exactly one. */
export function parseArgs(argv: string[], spec: Record<string, { flags: string[]; values: string[] }>): Parsed {
  for (const arg of argv) if (SECRET_VALUE.test(arg)) throw new UsageError(TOKEN_ARGV_REFUSAL)
  const [command = 'help', ...rest] = argv
  if (command === '-h' || command === '--help') return { command: 'help', options: {} }
  const allowed = spec[command]
  if (!allowed) throw new UsageError(`unknown command "${command}"; try "gpuhq-agent help"`)
  const options: Record<string, string | true> = {}
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!
    if (!arg.startsWith('--')) throw new UsageError(`unexpected argument "${arg}"`)
    const eq = arg.indexOf('=')
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2)
    if (SECRET_OPTIONS.has(name)) throw new UsageError(TOKEN_ARGV_REFUSAL)
    if (name === 'help' || name === 'h') return { command: 'help', options: { topic: command } }
    if (allowed.flags.includes(name)) {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`)
      options[name] = true
    } else if (allowed.values.includes(name)) {
      const value = eq >= 0 ? arg.slice(eq + 1) : rest[++i]
      if (value === undefined || (eq < 0 && value.startsWith('--'))) throw new UsageError(`--${name} needs a value`)
      options[name] = value
    } else throw new UsageError(`unknown option --${name} for "${command}"`)
  }
  return { command, options }
}

export function numberOption(options: Record<string, string | true>, name: string, check: (n: number) => boolean, hint: string): number | undefined {
  const raw = options[name]
  if (raw === undefined) return undefined
  const n = Number(raw)
  if (typeof raw !== 'string' || !Number.isFinite(n) || !check(n)) throw new UsageError(`--${name} must be ${hint}`)
  return n
}

export function stringOption(options: Record<string, string | true>, name: string): string | undefined {
  const v = options[name]
  return typeof v === 'string' ? v : undefined
}
