import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { saveCredential } from '../../agent/lib/credential'
import { FakeService } from './fake-service'

const AGENT = join(import.meta.dir, '../../agent/gpuhq-agent.ts')
let svc: FakeService
const dirs: string[] = []

beforeAll(() => {
  svc = new FakeService()
})
afterAll(async () => {
  await svc.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gpuhq-agent-cli-'))
  dirs.push(d)
  return d
}

async function agent(args: string[], stdin?: string) {
  const proc = Bun.spawn([process.execPath, AGENT, ...args], { stdin: stdin === undefined ? 'ignore' : new Blob([stdin]), stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, stdout, stderr, out: stdout + stderr }
}

function tokenFile(dir: string, token: string): string {
  const path = join(dir, 'init-token')
  writeFileSync(path, token + '\n', { mode: 0o600 })
  return path
}

describe('the init token never travels as an argument', () => {
  test.each([
    [['--token', 'gpuhq_init_abc']],
    [['--token=whatever']],
    [['--init-token', 'x']],
    [['--token-file', '/dev/null', 'gpuhq_init_abcdef']],
    [['--token-file=gpuhq_init_abcdef']],
  ])('enroll %j is refused with the reason, and nothing is sent', async (extra) => {
    const before = svc.registrations.length
    const r = await agent(['enroll', '--url', svc.url, ...extra])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('visible to every user of this host')
    expect(r.stderr).toContain('--token-file')
    expect(r.stderr).toContain('--token-stdin')
    expect(svc.registrations.length).toBe(before)
  })

  test('enroll needs exactly one token source', async () => {
    expect((await agent(['enroll', '--url', svc.url])).code).toBe(2)
    expect((await agent(['enroll', '--url', svc.url, '--token-stdin', '--token-file', '/x'])).code).toBe(2)
  })
})

describe('enroll', () => {
  test('with --token-file: registers with the protocol fields and stores the credential 0600 without printing the token', async () => {
    const dir = tempDir()
    const stateDir = join(dir, 'state')
    const token = svc.issueInitToken()
    const r = await agent([
      'enroll',
      '--url',
      svc.url + '/',
      '--token-file',
      tokenFile(dir, token),
      '--state-dir',
      stateDir,
      '--simulate',
      '2',
      '--port-range',
      '40000-40199',
    ])
    expect(r.code).toBe(0)
    const body = svc.registrations.at(-1)!
    expect(Object.keys(body).sort()).toEqual(
      ['agent_version', 'disk_gb', 'fingerprint', 'gpus', 'hostname', 'init_token', 'port_range', ...('public_ip' in body ? ['public_ip'] : [])].sort(),
    )
    expect(body).toMatchObject({ init_token: token, agent_version: '1.0.0', port_range: '40000-40199' })
    expect(body.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(body.gpus).toEqual([
      { index: 0, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24564, uuid: expect.stringMatching(/^GPU-/) },
      { index: 1, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24564, uuid: expect.stringMatching(/^GPU-/) },
    ])

    const path = join(stateDir, 'credential.json')
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(statSync(stateDir).mode & 0o777).toBe(0o700)
    const cred = JSON.parse(readFileSync(path, 'utf8'))
    expect(cred).toMatchObject({ url: svc.url, heartbeat_interval_s: 15, telemetry_interval_s: 60, port_range: '40000-40199', simulate: 2 })
    expect(cred.agent_token).toStartWith('gpuhq_agt_')
    expect(svc.credentials.get(cred.agent_token)).toBe(cred.server_id)
    expect(r.out).not.toContain(cred.agent_token)
    expect(r.out).not.toContain(token)
    expect(JSON.parse(r.stdout.trim().split('\n').at(-1)!)).toMatchObject({ msg: 'enrolled', server_id: cred.server_id })
  })

  test('with --token-stdin', async () => {
    const stateDir = join(tempDir(), 'state')
    const r = await agent(['enroll', '--url', svc.url, '--token-stdin', '--state-dir', stateDir], svc.issueInitToken() + '\n')
    expect(r.code).toBe(0)
    expect(existsSync(join(stateDir, 'credential.json'))).toBe(true)
  })

  test('a used init token: a clear message, exit 1, no credential written', async () => {
    const dir = tempDir()
    const token = svc.issueInitToken()
    expect((await agent(['enroll', '--url', svc.url, '--token-file', tokenFile(dir, token), '--state-dir', join(dir, 'a')])).code).toBe(0)
    const r = await agent(['enroll', '--url', svc.url, '--token-file', tokenFile(dir, token), '--state-dir', join(dir, 'b')])
    expect(r.code).toBe(1)
    expect(r.stdout).toContain('unknown, already used, expired or revoked')
    expect(existsSync(join(dir, 'b', 'credential.json'))).toBe(false)
  })

  test('server_limit_reached and unsupported_agent_version explain themselves; the latter says do not retry (78)', async () => {
    const dir = tempDir()
    const file = tokenFile(dir, svc.issueInitToken())
    try {
      svc.registerProblem = { status: 409, code: 'server_limit_reached', detail: 'the free plan allows 1 server' }
      const limit = await agent(['enroll', '--url', svc.url, '--token-file', file, '--state-dir', join(dir, 's')])
      expect(limit.code).toBe(1)
      expect(limit.stdout).toContain('plan allows no more servers (the free plan allows 1 server)')
      svc.registerProblem = { status: 426, code: 'unsupported_agent_version', detail: 'agents below 2.0.0 are not accepted' }
      const old = await agent(['enroll', '--url', svc.url, '--token-file', file, '--state-dir', join(dir, 's')])
      expect(old.code).toBe(78)
      expect(old.stdout).toContain('agents below 2.0.0 are not accepted')
    } finally {
      svc.registerProblem = null
    }
  })

  test('an unreachable service is reported as such', async () => {
    const dir = tempDir()
    const r = await agent(['enroll', '--url', 'http://127.0.0.1:9', '--token-file', tokenFile(dir, svc.issueInitToken()), '--state-dir', join(dir, 's')])
    expect(r.code).toBe(1)
    expect(r.stdout).toContain('refused the connection')
  })

  test('a file that holds something other than an init token is refused before anything is sent', async () => {
    const dir = tempDir()
    const before = svc.registrations.length
    const r = await agent(['enroll', '--url', svc.url, '--token-file', tokenFile(dir, 'gpuhq_agt_' + 'x'.repeat(46)), '--state-dir', join(dir, 's')])
    expect(r.code).toBe(1)
    expect(r.stdout).toContain('not an init token')
    expect(r.out).not.toContain('x'.repeat(46))
    expect(svc.registrations.length).toBe(before)
  })
})

describe('the credential file', () => {
  test('is written 0600 even under a permissive umask, and replaced atomically', () => {
    const stateDir = join(tempDir(), 'state')
    const old = process.umask(0)
    try {
      const cred = {
        url: 'http://x',
        server_id: 's',
        agent_token: 'gpuhq_agt_1',
        ws_url: 'ws://x',
        heartbeat_interval_s: 1,
        telemetry_interval_s: 1,
        enrolled_at: 'now',
      }
      saveCredential(stateDir, cred)
      saveCredential(stateDir, { ...cred, server_id: 's2' })
    } finally {
      process.umask(old)
    }
    const path = join(stateDir, 'credential.json')
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(JSON.parse(readFileSync(path, 'utf8')).server_id).toBe('s2')
    expect(require('node:fs').readdirSync(stateDir)).toEqual(['credential.json'])
  })

  test('run without a credential says to enrol and exits 78, which systemd does not restart', async () => {
    const r = await agent(['run', '--state-dir', join(tempDir(), 'none')])
    expect(r.code).toBe(78)
    expect(r.stdout).toContain('not enrolled')
  })
})

describe('facts on a host where nvidia-smi finds no GPUs (issue 35)', () => {
  function fakeNvidiaSmi(script: string): string {
    const path = join(tempDir(), 'nvidia-smi')
    writeFileSync(path, `#!/bin/sh\n${script}\n`, { mode: 0o755 })
    return path
  }

  test.each([
    ['missing', () => join(tempDir(), 'no-such-nvidia-smi'), 'not found'],
    ['failing', () => fakeNvidiaSmi('echo "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver." >&2; exit 9'), 'exited with 9'],
    ['listing none', () => fakeNvidiaSmi('exit 0'), 'lists no GPUs'],
  ])('nvidia-smi %s: the facts print with gpu_error, stderr says so, exit 1', async (_what, bin, reason) => {
    const r = await agent(['facts', '--nvidia-smi', bin(), '--state-dir', tempDir()])
    expect(r.code).toBe(1)
    const facts = JSON.parse(r.stdout) as { gpus: unknown[]; gpu_error?: string }
    expect(facts.gpus).toEqual([])
    expect(facts.gpu_error).toContain(reason)
    expect(r.stderr).toContain('no GPUs found')
    expect(r.stderr).toContain(reason)
  })

  test('a working nvidia-smi: its GPUs, no gpu_error, exit 0', async () => {
    const bin = fakeNvidiaSmi('echo "0, NVIDIA GeForce RTX 4090, 24564, GPU-0a1b2c3d"')
    const r = await agent(['facts', '--nvidia-smi', bin, '--state-dir', tempDir()])
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' })
    const facts = JSON.parse(r.stdout) as { gpus: { model: string }[]; gpu_error?: string }
    expect(facts.gpus.map((g) => g.model)).toEqual(['NVIDIA GeForce RTX 4090'])
    expect(facts.gpu_error).toBeUndefined()
  })
})
