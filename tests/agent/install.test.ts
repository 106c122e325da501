import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FakeService } from './fake-service'

/**
 * install.sh under dash (a strict POSIX sh), into temp directories, with a recording stand-in for
 * systemctl (the GPUHQ_* overrides exist for packaging and for this test), against the local service.
 */

const SCRIPT = join(import.meta.dir, '../../agent/install.sh')
const isRoot = process.getuid?.() === 0
// dash is the strictest common /bin/sh; fall back to the system sh where it is missing.
const SH = Bun.which('dash') ?? 'sh'
let svc: FakeService
const dirs: string[] = []
beforeAll(() => {
  svc = new FakeService()
})
afterAll(async () => {
  await svc.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function sandbox() {
  const root = mkdtempSync(join(tmpdir(), 'gpuhq-agent-install-'))
  dirs.push(root)
  const systemctl = join(root, 'systemctl')
  writeFileSync(systemctl, `#!/bin/sh\necho "$*" >> '${join(root, 'systemctl.log')}'\n`)
  chmodSync(systemctl, 0o755)
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GPUHQ_AGENT_PREFIX: join(root, 'opt'),
    GPUHQ_AGENT_STATE_DIR: join(root, 'state'),
    GPUHQ_SYSTEMD_DIR: join(root, 'units'),
    GPUHQ_SYSTEMCTL: systemctl,
    GPUHQ_BUN: process.execPath,
  }
  const install = async (args: string[], stdin?: string) => {
    const proc = Bun.spawn([SH, SCRIPT, ...args], { env, stdin: stdin === undefined ? 'ignore' : new Blob([stdin]), stdout: 'pipe', stderr: 'pipe' })
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    return { code, out: out + err }
  }
  return {
    root,
    env,
    install,
    systemctlCalls: () => (existsSync(join(root, 'systemctl.log')) ? readFileSync(join(root, 'systemctl.log'), 'utf8').trim().split('\n') : []),
  }
}

describe('install.sh', () => {
  test('is valid POSIX sh', async () => {
    expect(await Bun.spawn([SH, '-n', SCRIPT]).exited).toBe(0)
  })

  test('refuses a token given as an argument', async () => {
    const s = sandbox()
    for (const args of [['--token', 'gpuhq_init_x'], ['--token=gpuhq_init_x'], ['gpuhq_init_x']]) {
      const r = await s.install(['--url', svc.url, ...args])
      expect(r.code).toBe(1)
      expect(r.out).toContain('visible to every user of this host')
    }
    expect(existsSync(s.env.GPUHQ_AGENT_PREFIX)).toBe(false)
  })

  test.skipIf(!isRoot)('installs the agent, enrols from a token file and writes, enables and starts the unit', async () => {
    const s = sandbox()
    const tokenFile = join(s.root, 'init-token')
    const token = svc.issueInitToken()
    writeFileSync(tokenFile, token, { mode: 0o600 })
    const r = await s.install(['--url', svc.url, '--token-file', tokenFile, '--port-range', '40000-40199', '--simulate', '2'])
    expect(r.code).toBe(0)
    expect(r.out).not.toContain(token)
    expect(existsSync(join(s.env.GPUHQ_AGENT_PREFIX, 'gpuhq-agent.ts'))).toBe(true)
    expect(existsSync(join(s.env.GPUHQ_AGENT_PREFIX, 'lib', 'session.ts'))).toBe(true)
    const cred = join(s.env.GPUHQ_AGENT_STATE_DIR, 'credential.json')
    expect(statSync(cred).mode & 0o777).toBe(0o600)
    expect(svc.registrations.at(-1)).toMatchObject({ init_token: token, port_range: '40000-40199' })

    const unit = readFileSync(join(s.env.GPUHQ_SYSTEMD_DIR, 'gpuhq-agent.service'), 'utf8')
    expect(unit).toContain('Restart=always')
    expect(unit).toContain('RestartSec=5')
    expect(unit).toContain('User=root')
    expect(unit).toContain('RestartPreventExitStatus=78')
    expect(unit).toContain(
      `ExecStart=${process.execPath} ${s.env.GPUHQ_AGENT_PREFIX}/gpuhq-agent.ts run --state-dir ${s.env.GPUHQ_AGENT_STATE_DIR} --simulate 2`,
    )
    expect(unit).not.toContain('gpuhq_init_')
    expect(s.systemctlCalls()).toEqual(['daemon-reload', 'enable gpuhq-agent.service', 'restart gpuhq-agent.service'])

    // Re-running without a token keeps the enrolment and only refreshes the files.
    const before = readFileSync(cred, 'utf8')
    const again = await s.install(['--url', svc.url, '--simulate', '2'])
    expect(again.code).toBe(0)
    expect(again.out).toContain('already enrolled')
    expect(readFileSync(cred, 'utf8')).toBe(before)
  })

  test.skipIf(!isRoot)('enrols from standard input', async () => {
    const s = sandbox()
    const r = await s.install(['--url', svc.url, '--token-stdin', '--no-start'], svc.issueInitToken())
    expect(r.code).toBe(0)
    expect(existsSync(join(s.env.GPUHQ_AGENT_STATE_DIR, 'credential.json'))).toBe(true)
    expect(s.systemctlCalls()).toEqual([])
  })

  test.skipIf(!isRoot)('a host that is not enrolled and gets no token is told what to do', async () => {
    const s = sandbox()
    const r = await s.install(['--url', svc.url])
    expect(r.code).toBe(1)
    expect(r.out).toContain('--token-file')
  })
})
