import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'

/** scripts/start with a bad setting: one line naming the variable, and nothing announcing a port first. */

const REPO = join(import.meta.dir, '../..')

describe('scripts/start', () => {
  test('an invalid PORT prints one line naming it, exit code 2, and no "starting on port" banner before it', () => {
    const p = Bun.spawnSync(['scripts/start'], { cwd: REPO, env: { ...process.env, PORT: 'abc', GPUHQ_BANNER: '' } })
    const err = p.stderr.toString()
    expect(p.exitCode).toBe(2)
    expect(err.trimEnd().split('\n')).toEqual(['gpuhq: invalid configuration: PORT: expected a whole number, got "abc"'])
    expect(p.stdout.toString()).toBe('')
  }, 60_000)
})
