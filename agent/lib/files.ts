import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { randomBytes } from 'node:crypto'

/**
 * Writes `content` to `path` so that no reader ever sees a partial file and the file never exists,
 * even for an instant, with more than owner-only permissions: a temp file is created with 0600
 * (O_EXCL, so nobody can pre-create it), synced, then renamed over the target.
 */
export function writeFileAtomic0600(path: string, content: string): void {
  const dir = dirname(path)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const tmp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`)
  const fd = openSync(tmp, 'wx', 0o600)
  try {
    writeSync(fd, content)
    fsyncSync(fd)
  } catch (err) {
    closeSync(fd)
    rmSync(tmp, { force: true })
    throw err
  }
  closeSync(fd)
  // The umask can only remove bits, but a chmod makes the intent explicit and survives odd umasks.
  chmodSync(tmp, 0o600)
  renameSync(tmp, path)
  try {
    const dfd = openSync(dir, 'r')
    fsyncSync(dfd)
    closeSync(dfd)
  } catch {
    // Directory fsync is best effort (not every filesystem allows opening a directory).
  }
}
