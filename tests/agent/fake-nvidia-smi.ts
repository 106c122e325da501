#!/usr/bin/env bun
/**
 * A stand-in for `nvidia-smi` that answers from a capture of a real machine (tests/agent/captures/,
 * their README): every command the agent runs is answered with that command's section of the
 * capture, `--query-gpu` columns projected out of the capture's full CSV (aliases resolved from
 * the capture's own `--help-query-gpu`, units dropped under `nounits`), and a field the driver does
 * not know refused the way nvidia-smi refuses it. FAKE_NVIDIA_SMI_CAPTURE names the file,
 * FAKE_NVIDIA_SMI_PHASE picks `idle` or `load` (default `load`).
 *
 * Run as a program (the agent spawns it as `nvidia-smi`), and imported by the tests for `project`,
 * so what they expect is read out of the same capture text.
 */
import { readFileSync } from 'node:fs'

type Section = { phase: string; label: string; argv: string; body: string }

function sections(text: string): Section[] {
  const out: Section[] = []
  const parts = text.split(/^#{80}\n/m)
  for (let i = 0; i < parts.length - 1; i++) {
    const head = /^# (\w[\w-]*) :: (.*)\n# \$ nvidia-smi ?(.*)\n$/.exec(parts[i]!)
    if (head) out.push({ phase: head[1]!, label: head[2]!, argv: head[3]!.trim(), body: parts[i + 1]! })
  }
  return out
}

/** `"a" or "b"` lines of --help-query-gpu: every accepted name → the first (the CSV's column name). */
function aliases(help: string): Map<string, string> {
  const map = new Map<string, string>()
  for (const line of help.split('\n')) {
    const names = line.match(/^"[^"]+"(?: or "[^"]+")*\s*$/) ? [...line.matchAll(/"([^"]+)"/g)].map((m) => m[1]!) : []
    for (const n of names) map.set(n, names[0]!)
  }
  return map
}

/** The full CSV of one phase: header names (units cut off, kept apart) and the GPU rows. */
function fullCsv(all: Section[], phase: string) {
  const section = all.find((s) => s.phase === phase && s.argv.startsWith('--query-gpu='))
  if (!section) throw new Error(`the capture has no ${phase} query-gpu section`)
  const lines = section.body.split('\n').filter((l) => l.trim())
  const header = lines[0]!.split(', ').map((h) => {
    const m = /^(.*?)(?: \[(.+)\])?$/.exec(h.trim())!
    return { name: m[1]!, unit: m[2] ?? null }
  })
  return { header, rows: lines.slice(1).map((l) => l.split(', ')) }
}

export type Projection = { ok: true; lines: string[] } | { ok: false; message: string }

/** `--query-gpu=<fields>` with `--format=<format>` answered from the capture, as nvidia-smi would. */
export function project(text: string, fields: string[], format: string, phase = 'load'): Projection {
  const all = sections(text)
  const names = aliases(all.find((s) => s.argv === '--help-query-gpu')?.body ?? '')
  const { header, rows } = fullCsv(all, phase)
  const opts = new Set(format.split(','))
  const columns: number[] = []
  for (const field of fields) {
    const canonical = names.get(field)
    if (!canonical) return { ok: false, message: `Field "${field}" is not a valid field to query.` }
    const at = header.findIndex((h) => h.name === canonical)
    if (at < 0) throw new Error(`the capture's CSV has no column ${canonical} (asked as ${field})`)
    columns.push(at)
  }
  const lines: string[] = []
  if (!opts.has('noheader'))
    lines.push(columns.map((c) => (header[c]!.unit && !opts.has('nounits') ? `${header[c]!.name} [${header[c]!.unit}]` : header[c]!.name)).join(', '))
  for (const row of rows)
    lines.push(
      columns
        .map((c) => {
          const cell = row[c] ?? ''
          const unit = header[c]!.unit
          return opts.has('nounits') && unit && cell.endsWith(` ${unit}`) ? cell.slice(0, -unit.length - 1) : cell
        })
        .join(', '),
    )
  return { ok: true, lines }
}

/** The answer to one command line: stdout and the exit code. */
function answer(text: string, argv: string[], phase = 'load'): { stdout: string; stderr: string; code: number } {
  const all = sections(text)
  const query = argv.find((a) => a.startsWith('--query-gpu='))
  if (query) {
    const format = argv.find((a) => a.startsWith('--format='))?.slice('--format='.length) ?? ''
    if (!format.split(',').includes('csv')) return { stdout: '', stderr: 'The --format switch is required.\n', code: 2 }
    const p = project(text, query.slice('--query-gpu='.length).split(','), format, phase)
    // nvidia-smi prints this refusal on stdout and exits 2.
    return p.ok ? { stdout: p.lines.join('\n') + '\n', stderr: '', code: 0 } : { stdout: p.message + '\n', stderr: '', code: 2 }
  }
  const wanted = argv.join(' ')
  const section = all.find((s) => s.argv === wanted && s.phase === phase) ?? all.find((s) => s.argv === wanted && s.phase === 'capabilities')
  if (!section) return { stdout: '', stderr: `fake nvidia-smi: the capture has no answer to "nvidia-smi ${wanted}"\n`, code: 2 }
  return { stdout: section.body.replace(/\n+$/, '\n'), stderr: '', code: 0 }
}

if (import.meta.main) {
  const text = readFileSync(process.env.FAKE_NVIDIA_SMI_CAPTURE ?? '', 'utf8')
  const r = answer(text, process.argv.slice(2), process.env.FAKE_NVIDIA_SMI_PHASE ?? 'load')
  process.stdout.write(r.stdout)
  process.stderr.write(r.stderr)
  process.exit(r.code)
}
