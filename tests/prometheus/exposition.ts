import { existsSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Reading the Prometheus exposition in the tests. `promtool check metrics` (Debian's prometheus
 * package, fetched by scripts/test: scripts/lib.sh ensure_promtool) is the real parser and linter;
 * once it has passed a text, `parseExposition` reads the values back to assert on them. It is the
 * tests' own reading of the 0.0.4 text format, independent of src/, so an escaping bug there shows.
 */

const REPO = join(import.meta.dir, '../..')

/** promtool: the one scripts/test fetched into .tools/bin, else one on PATH. */
function promtoolPath(): string {
  const fetched = join(REPO, '.tools/bin/promtool')
  const found = existsSync(fetched) ? fetched : Bun.which('promtool')
  if (!found) throw new Error("promtool is missing: scripts/test fetches it from Debian's prometheus package (scripts/lib.sh ensure_promtool); see its message")
  return found
}

/** `promtool <args>` with `input` on standard input: its exit code and everything it printed. */
export function promtool(args: string[], input = ''): { code: number; output: string } {
  const run = Bun.spawnSync([promtoolPath(), ...args], { stdin: Buffer.from(input), stdout: 'pipe', stderr: 'pipe', timeout: 60_000 })
  return { code: run.exitCode ?? -1, output: `${run.stdout.toString()}${run.stderr.toString()}` }
}

export type Sample = { name: string; labels: Record<string, string>; value: string }
export type Parsed = { types: Map<string, string>; helps: Map<string, string>; samples: Sample[] }

/** Unescapes a label value (\\, \" and \n) or HELP text (\\ and \n). */
function unescapeText(text: string): string {
  return text.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))
}

/** The families (TYPE and HELP by name) and samples of a text that promtool accepted. */
export function parseExposition(text: string): Parsed {
  const types = new Map<string, string>()
  const helps = new Map<string, string>()
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '') continue
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)
    if (meta) {
      ;(meta[1] === 'HELP' ? helps : types).set(meta[2]!, meta[1] === 'HELP' ? unescapeText(meta[3]!) : meta[3]!)
      continue
    }
    if (line.startsWith('#')) continue
    const head = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line)
    if (!head) throw new Error(`not a sample line: ${line}`)
    const name = head[1]!
    let rest = line.slice(name.length)
    const labels: Record<string, string> = {}
    if (rest.startsWith('{')) {
      const pair = /^[{,]([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/
      for (let m = pair.exec(rest); m; m = pair.exec(rest)) {
        labels[m[1]!] = unescapeText(m[2]!)
        rest = rest.slice(m[0].length)
      }
      if (!rest.startsWith('}')) throw new Error(`unterminated labels: ${line}`)
      rest = rest.slice(1)
    }
    const value = /^ (\S+)( -?\d+)?$/.exec(rest)
    if (!value) throw new Error(`no value: ${line}`)
    samples.push({ name, labels, value: value[1]! })
  }
  return { types, helps, samples }
}

/** Samples of one family whose labels include `match`. */
export function samplesOf(p: Parsed, name: string, match: Record<string, string> = {}): Sample[] {
  return p.samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
}

/** The one sample's value text; fails unless exactly one matches. */
export function sampleValue(p: Parsed, name: string, match: Record<string, string> = {}): string {
  const found = samplesOf(p, name, match)
  if (found.length !== 1) throw new Error(`${name} ${JSON.stringify(match)}: ${found.length} samples, expected one`)
  return found[0]!.value
}

/** The families present (those with a TYPE line). */
export const familiesOf = (p: Parsed) => [...p.types.keys()].sort()
