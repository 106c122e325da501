import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestApp, type TestApp } from '../support/app'

let app: TestApp
const dir = mkdtempSync(join(tmpdir(), 'gpuhq-agent-dl-'))
beforeAll(async () => {
  app = await startTestApp()
})
afterAll(async () => {
  await app.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('installing the agent from the service', () => {
  test('install.sh is served as a shell script, and it is the one in agent/', async () => {
    const res = await app.fetch('/agent/install.sh')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('text/x-shellscript')
    expect(await res.text()).toBe(readFileSync(join(import.meta.dir, '../../agent/install.sh'), 'utf8'))
  })

  test('the tarball install.sh downloads unpacks with tar into a runnable agent identical to agent/', async () => {
    const res = await app.fetch('/agent/gpuhq-agent.tar.gz')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/gzip')
    await Bun.write(join(dir, 'agent.tar.gz'), await res.arrayBuffer())
    const untar = Bun.spawnSync(['tar', '-xzf', join(dir, 'agent.tar.gz'), '-C', dir])
    expect(untar.exitCode).toBe(0)
    for (const f of ['gpuhq-agent.ts', 'install.sh', 'lib/session.ts'])
      expect(readFileSync(join(dir, f), 'utf8')).toBe(readFileSync(join(import.meta.dir, '../../agent', f), 'utf8'))
    const version = Bun.spawnSync([process.execPath, join(dir, 'gpuhq-agent.ts'), 'version'])
    expect(version.exitCode).toBe(0)
    expect(version.stdout.toString()).toMatch(/\d+\.\d+\.\d+/)
  })
})
