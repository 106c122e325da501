import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { freePort, startTestApp, type TestApp } from '../support/app'
import { eventually, getServer, mintInitToken, newOwner, stopApp, type Owner } from '../support/fleet'
import { type BuiltAgent, builtAgent, HOST_TARGET, serveDir } from './agent-binary'

/**
 * install.sh under dash (a strict POSIX sh), into temp directories, with a recording stand-in for
 * systemctl (the GPUHQ_* overrides exist for packaging and for this test), against the real
 * service serving the agent as one executable (built once by scripts/build-agent.ts, cached).
 * PATH holds what a bare host has (curl, sha256sum, coreutils): no Bun, no npm.
 */

const SCRIPT = join(import.meta.dir, '../../agent/install.sh')
const isRoot = process.getuid?.() === 0
// dash is the strictest common /bin/sh; fall back to the system sh where it is missing.
const SH = Bun.which('dash') ?? 'sh'
const FILE = `gpuhq-agent-${HOST_TARGET}`
let app: TestApp
let owner: Owner
let agent: BuiltAgent
let tamperer: ReturnType<typeof Bun.serve>
const dirs: string[] = []
const children: Subprocess[] = []

beforeAll(async () => {
  agent = await builtAgent()
  const bin = mkdtempSync(join(tmpdir(), 'gpuhq-agent-served-'))
  dirs.push(bin)
  serveDir(bin, agent)
  const port = freePort()
  app = await startTestApp({ AGENT_BIN_DIR: bin, PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'silent' }, { port })
  owner = await newOwner(app, 'install', 'pro')
  // A man in the middle: passes everything through to the service, but flips one byte of the executable.
  tamperer = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const path = new URL(req.url).pathname
      const res = await fetch(app.url + path)
      if (path !== `/agent/${FILE}`) return res
      const body = new Uint8Array(await res.arrayBuffer())
      body[body.length >> 1] = body[body.length >> 1]! ^ 0xff
      return new Response(body, { headers: { 'content-type': 'application/octet-stream' } })
    },
  })
}, 120_000)
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
  tamperer?.stop(true)
  await stopApp(app)
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function sandbox() {
  const root = mkdtempSync(join(tmpdir(), 'gpuhq-agent-install-'))
  dirs.push(root)
  const systemctl = join(root, 'systemctl')
  writeFileSync(systemctl, `#!/bin/sh\necho "$*" >> '${join(root, 'systemctl.log')}'\n`)
  chmodSync(systemctl, 0o755)
  const env = {
    // A bare host: the system's binaries only, so neither bun nor npm is found.
    PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
    GPUHQ_AGENT_PREFIX: join(root, 'opt'),
    GPUHQ_AGENT_STATE_DIR: join(root, 'state'),
    GPUHQ_SYSTEMD_DIR: join(root, 'units'),
    GPUHQ_SYSTEMCTL: systemctl,
  }
  const install = async (args: string[], stdin?: string) => {
    const proc = Bun.spawn([SH, SCRIPT, ...args], { env, stdin: stdin === undefined ? 'ignore' : new Blob([stdin]), stdout: 'pipe', stderr: 'pipe' })
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    return { code, out: out + err, err }
  }
  return {
    root,
    env,
    install,
    systemctlCalls: () => (existsSync(join(root, 'systemctl.log')) ? readFileSync(join(root, 'systemctl.log'), 'utf8').trim().split('\n') : []),
  }
}

async function tokenFile(root: string): Promise<{ path: string; token: string; serverId: string | null }> {
  const t = await mintInitToken(app, owner)
  const path = join(root, 'init-token')
  writeFileSync(path, t.token, { mode: 0o600 })
  return { path, token: t.token, serverId: t.server_id }
}

describe('install.sh', () => {
  test('is valid POSIX sh', async () => {
    expect(await Bun.spawn([SH, '-n', SCRIPT]).exited).toBe(0)
  })

  test('refuses a token given as an argument', async () => {
    const s = sandbox()
    for (const args of [['--token', 'gpuhq_init_x'], ['--token=gpuhq_init_x'], ['gpuhq_init_x']]) {
      const r = await s.install(['--url', app.url, ...args])
      expect(r.code).toBe(1)
      expect(r.out).toContain('visible to every user of this host')
    }
    expect(existsSync(s.env.GPUHQ_AGENT_PREFIX)).toBe(false)
  })

  test.skipIf(!isRoot)(
    'with only curl, sha256sum and systemd: installs the one file, verifies it, enrols, writes a hardened unit, and the agent goes online',
    async () => {
      const s = sandbox()
      const { path, token } = await tokenFile(s.root)
      const r = await s.install(['--url', app.url, '--token-file', path, '--port-range', '40000-40199', '--simulate', '2'])
      expect(r.out).not.toContain(token)
      expect(r.code).toBe(0)
      expect(r.out).toContain(`sha256 ${agent.sha256}`)

      const installed = join(s.env.GPUHQ_AGENT_PREFIX, 'gpuhq-agent')
      expect(Bun.spawnSync(['sha256sum', installed]).stdout.toString().split(' ')[0]).toBe(agent.sha256)
      expect(statSync(installed).mode & 0o777).toBe(0o755)
      expect(existsSync(join(s.env.GPUHQ_AGENT_PREFIX, 'gpuhq-agent.ts'))).toBe(false)
      const cred = join(s.env.GPUHQ_AGENT_STATE_DIR, 'credential.json')
      expect(statSync(cred).mode & 0o777).toBe(0o600)
      const serverId = (JSON.parse(readFileSync(cred, 'utf8')) as { server_id: string }).server_id

      const unit = readFileSync(join(s.env.GPUHQ_SYSTEMD_DIR, 'gpuhq-agent.service'), 'utf8')
      const exec = /^ExecStart=(.*)$/m.exec(unit)![1]!
      expect(exec).toBe(`${installed} run --state-dir ${s.env.GPUHQ_AGENT_STATE_DIR} --simulate 2`)
      for (const line of [
        'Restart=always',
        'RestartPreventExitStatus=78',
        'User=root',
        'NoNewPrivileges=yes',
        'ProtectSystem=full',
        'PrivateTmp=yes',
        `ReadWritePaths=${s.env.GPUHQ_AGENT_STATE_DIR}`,
      ])
        expect(unit).toContain(`\n${line}\n`)
      expect(unit).not.toContain('gpuhq_init_')
      expect(unit).not.toContain('bun')
      expect(s.systemctlCalls()).toEqual(['daemon-reload', 'enable gpuhq-agent.service', 'restart gpuhq-agent.service'])

      // What systemd would start: the unit's ExecStart, as it is written.
      const proc = Bun.spawn(exec.split(' '), { env: { PATH: s.env.PATH }, stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' })
      children.push(proc)
      const server = await eventually(async () => {
        const detail = await getServer(app, owner, serverId)
        return detail.presence === 'online' ? detail : null
      }, 30_000)
      expect(server).toMatchObject({ agent_version: agent.version, gpu_count: 2 })
      proc.kill('SIGTERM')
      expect(await proc.exited).toBe(0)

      // Re-running without a token keeps the enrolment; the file it replaces is kept.
      const before = readFileSync(cred, 'utf8')
      const again = await s.install(['--url', app.url, '--simulate', '2'])
      expect(again.code).toBe(0)
      expect(again.out).toContain('already enrolled')
      expect(readFileSync(cred, 'utf8')).toBe(before)
      expect(existsSync(`${installed}.previous`)).toBe(true)
    },
    90_000,
  )

  test.skipIf(!isRoot)(
    'a tampered download is refused in one line before anything is installed',
    async () => {
      const s = sandbox()
      const { path } = await tokenFile(s.root)
      const r = await s.install(['--url', tamperer.url.toString().replace(/\/$/, ''), '--token-file', path, '--simulate', '2'])
      expect(r.code).toBe(1)
      const lines = r.err.trim().split('\n')
      expect(lines.at(-1)).toMatch(new RegExp(`^gpuhq-agent install: refusing to install: ${FILE} has SHA-256 [0-9a-f]{64} but .* publishes ${agent.sha256} `))
      expect(existsSync(s.env.GPUHQ_AGENT_PREFIX)).toBe(false)
      expect(existsSync(s.env.GPUHQ_AGENT_STATE_DIR)).toBe(false)
      expect(existsSync(s.env.GPUHQ_SYSTEMD_DIR)).toBe(false)
      expect(s.systemctlCalls()).toEqual([])
      // The init token was not used: a correct install claims it.
      const ok = await s.install(['--url', app.url, '--token-file', path, '--simulate', '2', '--no-start'])
      expect(ok.code).toBe(0)
    },
    60_000,
  )

  test.skipIf(!isRoot)(
    'enrols from standard input',
    async () => {
      const s = sandbox()
      const t = await mintInitToken(app, owner)
      const r = await s.install(['--url', app.url, '--token-stdin', '--no-start', '--simulate', '1'], t.token)
      expect(r.code).toBe(0)
      expect(existsSync(join(s.env.GPUHQ_AGENT_STATE_DIR, 'credential.json'))).toBe(true)
      expect(s.systemctlCalls()).toEqual([])
    },
    60_000,
  )

  test.skipIf(!isRoot)('a host that is not enrolled and gets no token is told what to do', async () => {
    const s = sandbox()
    const r = await s.install(['--url', app.url])
    expect(r.code).toBe(1)
    expect(r.out).toContain('--token-file')
  })
})
