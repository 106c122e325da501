import { afterAll, describe, expect, test } from 'bun:test'
import { chmodSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, freshDataDir, serviceEnv, spawnService, startService, waitExit, type Service } from './service'

/**
 * Issue 13 (15, 16): a second start on a busy port is refused in one line; /readyz notices the
 * database file vanishing; data files are private to the service's user.
 */

const running: Service[] = []
const dirs: string[] = []
afterAll(async () => {
  for (const s of running) {
    s.proc.kill('SIGKILL')
    await waitExit(s, 5000)
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const dataDir = () => {
  const d = freshDataDir()
  dirs.push(d)
  return d
}

describe('startup', () => {
  test('a second gpuhq on a port in use exits with one line instead of sharing the port', async () => {
    const first = await startService(dataDir())
    running.push(first)
    const second = spawnService(serviceEnv(dataDir(), first.port))
    expect(await waitExit(second, 20_000)).toBe(1)
    const lines = second.stderr().trim().split('\n')
    expect(lines).toEqual([`gpuhq: cannot listen on port ${first.port}: it is in use by another program (or another gpuhq); set PORT to another port`])
  })

  test('a port taken by another program is refused the same way, without a stack trace', async () => {
    const port = freePort()
    const squatter = Bun.serve({ port, hostname: '0.0.0.0', reusePort: false, fetch: () => new Response('not gpuhq') })
    try {
      const service = spawnService(serviceEnv(dataDir(), port))
      expect(await waitExit(service, 20_000)).toBe(1)
      expect(service.stderr()).not.toContain(' at ')
      expect(service.stderr().trim().split('\n')).toHaveLength(1)
    } finally {
      squatter.stop(true)
    }
  })

  test('the database file is 0600 in a 0700 data directory, even one made 0755 by an older build', async () => {
    const dir = join(dataDir(), 'data')
    mkdirSync(dir, { mode: 0o755 })
    chmodSync(dir, 0o755)
    const service = await startService(dir, { DATA_DIR: dir, DATABASE_URL: `file:${join(dir, 'gpuhq.db')}` })
    running.push(service)
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    for (const f of ['gpuhq.db', 'gpuhq.db-wal']) expect({ f, mode: statSync(join(dir, f)).mode & 0o777 }).toEqual({ f, mode: 0o600 })
  })

  test('/readyz answers 503 once the database file is deleted from under the running service', async () => {
    const dir = dataDir()
    const service = await startService(dir)
    running.push(service)
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200)
    rmSync(join(dir, 'gpuhq.db'))
    const res = await fetch(`${service.url}/readyz`)
    expect(res.status).toBe(503)
    expect(((await res.json()) as { code: string }).code).toBe('temporarily_unavailable')
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200)
  })
})
