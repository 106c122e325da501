import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestApp, type TestApp } from '../support/app'
import { builtAgent, HOST_TARGET, serveDir } from '../agent/agent-binary'

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

  test('each executable is served with its SHA-256 (file and header) and version; an architecture not built is a 404 problem', async () => {
    const agent = await builtAgent()
    const bin = join(dir, 'bin')
    serveDir(bin, agent)
    const served = await startTestApp({ AGENT_BIN_DIR: bin, LOG_LEVEL: 'silent' })
    try {
      const name = `gpuhq-agent-${HOST_TARGET}`
      const res = await served.fetch(`/agent/${name}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('application/octet-stream')
      expect(res.headers.get('x-checksum-sha256')).toBe(agent.sha256)
      expect(res.headers.get('x-gpuhq-agent-version')).toBe(agent.version)
      const body = new Uint8Array(await res.arrayBuffer())
      expect(new Bun.CryptoHasher('sha256').update(body).digest('hex')).toBe(agent.sha256)
      const sum = await served.fetch(`/agent/${name}.sha256`)
      expect(sum.status).toBe(200)
      expect(await sum.text()).toBe(`${agent.sha256}  ${name}\n`)

      const other = HOST_TARGET === 'linux-x64' ? 'linux-arm64' : 'linux-x64'
      for (const path of [`/agent/gpuhq-agent-${other}`, `/agent/gpuhq-agent-${other}.sha256`]) {
        const missing = await served.fetch(path)
        expect(missing.status).toBe(404)
        expect(missing.headers.get('content-type')).toStartWith('application/problem+json')
        expect(((await missing.json()) as { detail: string }).detail).toContain('scripts/build-agent.ts')
      }
    } finally {
      await served.close()
    }
    // The suite's default app serves none.
    expect((await app.fetch(`/agent/gpuhq-agent-${HOST_TARGET}`)).status).toBe(404)
  }, 60_000)
})
