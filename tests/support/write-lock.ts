import { expect } from 'bun:test'
import { join } from 'node:path'
import type { TestApp } from './app'

/**
 * Another process holding `app`'s database write lock (tests/http/fixtures/hold-write-lock.ts), as
 * a backup, `scripts/admin` or a second instance would; resolves once it holds the lock.
 * `release` lets it go and waits for the process to end.
 */
export async function holdWriteLock(app: TestApp): Promise<{ release: () => Promise<void> }> {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, '../http/fixtures/hold-write-lock.ts'), app.databaseUrl.replace(/^file:/, '')], {
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const { value } = await child.stdout.getReader().read()
  expect(new TextDecoder().decode(value)).toContain('locked')
  return {
    release: async () => {
      child.stdin.write('release\n')
      child.stdin.end()
      await child.exited
    },
  }
}
