import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'

/**
 * The demo's own directory (`DEMO_DIR`, default ./data/demo): its database, secret key, mail and
 * the simulated servers' agent state. It is wiped and made again at every start, so it must never
 * be, or hold, the real service's data: the real DATA_DIR and DATABASE_URL (as scripts/start would
 * read them) are refused, and so is any directory that is not empty and was not made by a demo
 * (the marker file below), whatever it is called.
 */
const MARKER = '.gpuhq-demo'

export class DemoDirError extends Error {}

const inside = (child: string, parent: string) => {
  const r = relative(parent, child)
  return r === '' || !(r === '..' || r.startsWith(`..${sep}`) || isAbsolute(r))
}

/** The demo directory for `env`, checked against the real data's place; throws DemoDirError with the reason. */
export function demoDir(env: Record<string, string | undefined>, cwd = process.cwd()): string {
  const dir = resolve(cwd, env.DEMO_DIR || join('data', 'demo'))
  const realDataDir = resolve(cwd, env.DATA_DIR || 'data')
  const url = env.DATABASE_URL || 'file:./data/gpuhq.db'
  const realDb = url.startsWith('file:') && url !== 'file::memory:' ? resolve(cwd, url.slice('file:'.length)) : null
  if (inside(realDataDir, dir))
    throw new DemoDirError(`DEMO_DIR ${dir} is (or holds) the real data directory ${realDataDir}; the demo wipes its directory, so give it another one`)
  if (realDb && inside(realDb, dir))
    throw new DemoDirError(`DEMO_DIR ${dir} holds the real database ${realDb}; the demo wipes its directory, so give it another one`)
  return dir
}

/** Wipes the demo directory (only one a demo made, or an empty one) and makes it again, private, with its marker. */
export function freshDemoDir(dir: string): void {
  if (existsSync(dir)) {
    const entries = readdirSync(dir)
    if (entries.length > 0 && !entries.includes(MARKER))
      throw new DemoDirError(`DEMO_DIR ${dir} is not empty and was not made by the demo (no ${MARKER} in it); refusing to wipe it`)
    rmSync(dir, { recursive: true, force: true })
  }
  mkdirSync(dirname(dir), { recursive: true })
  mkdirSync(dir, { mode: 0o700 })
  writeFileSync(join(dir, MARKER), 'made by scripts/start --demo; wiped at every demo start\n')
}
