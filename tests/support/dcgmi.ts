import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * A stand-in for NVIDIA DCGM's `dcgmi` (tests/agent/captures/dcgmi/README.md): answers
 * `dcgmi diag -r <level>` with a capture of the real command's output and the exit code the real
 * one gives (non-zero when a GPU failed), and records every argument list it was run with.
 */
const DCGMI_CAPTURES = join(import.meta.dir, '../agent/captures/dcgmi')

export function fakeDcgmi(dir: string, opts: { capture?: string; stdout?: string; exitCode?: number } = {}): { bin: string; calls: () => string[] } {
  const bin = join(dir, 'dcgmi')
  const log = join(dir, 'dcgmi-calls.log')
  const out = join(dir, 'dcgmi-out.txt')
  writeFileSync(out, opts.capture ? readFileSync(join(DCGMI_CAPTURES, opts.capture), 'utf8') : (opts.stdout ?? ''))
  writeFileSync(log, '')
  writeFileSync(bin, `#!/bin/sh\necho "$*" >> '${log}'\ncat '${out}'\nexit ${opts.exitCode ?? 0}\n`, { mode: 0o755 })
  return {
    bin,
    calls: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l.trim()),
  }
}
