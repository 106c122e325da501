import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Subprocess } from 'bun'
import { GOOD_PASSWORD, sessionFrom, withSession } from '../support/accounts'

/**
 * The reference agent (agent/gpuhq-agent.ts) as an owner would run it, against the real service
 * as a child process: the operator creates the account with scripts/admin, the owner mints an
 * init token over HTTP and hands it to the agent in a file, the agent enrols and keeps its session
 * with N simulated GPUs, and the service sees the server online with those GPUs.
 */

const ROOT = resolve(import.meta.dir, '../..')
const BUN = process.execPath
let dir: string
let port: number
let url: string
let service: Subprocess<'ignore', 'pipe', 'pipe'>
const children: Subprocess[] = []

function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const p = probe.port!
  probe.stop(true)
  return p
}

function env(): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    NODE_ENV: 'test',
    TEST_CLOCK: 'true',
    PORT: String(port),
    PUBLIC_URL: url,
    DATA_DIR: dir,
    DATABASE_URL: `file:${join(dir, 'gpuhq.db')}`,
    SECRET_KEY: 'c'.repeat(64),
    LOG_LEVEL: 'warn',
    JOBS_ENABLED: 'false',
  }
}

async function run(args: string[], opts: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(args, { cwd: ROOT, env: opts.env ?? env(), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  children.push(proc)
  const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs ?? 20_000)
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

async function until<T>(check: () => Promise<T | null>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await check().catch(() => null)
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await Bun.sleep(50)
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gpuhq-refagent-'))
  port = freePort()
  url = `http://127.0.0.1:${port}`
  service = Bun.spawn([BUN, 'run', 'src/main.ts'], { cwd: ROOT, env: env(), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  await until(
    async () => ((await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) })).status === 200 ? true : null),
    15_000,
    'the service to be ready',
  )
})

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  service?.kill('SIGTERM')
  await Promise.race([service?.exited, Bun.sleep(5000)])
  if (service && service.exitCode === null && service.signalCode === null) service.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

describe('the reference agent in simulate mode', () => {
  test('enrols from a token file and keeps a session: the server is online with the simulated GPU count, and offline when the agent stops', async () => {
    // The operator creates the account; the owner sets a password and is signed in.
    const admin = await run([BUN, 'run', 'scripts/admin.ts', 'create-account', '--email', 'agent-owner@example.test', '--tenant-name', 'Agent rigs'])
    expect(admin.code).toBe(0)
    const ticket = /ticket to set the password[^:]*: (\S+)/.exec(admin.stdout)?.[1]
    expect(ticket).toBeDefined()
    const signedIn = await fetch(`${url}/api/v1/auth/password-reset/complete`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ticket, password: GOOD_PASSWORD }),
    })
    expect(signedIn.status).toBe(200)
    const headers = { ...withSession(sessionFrom(signedIn)!), 'content-type': 'application/json' }

    const minted = await fetch(`${url}/api/v1/tokens/init`, { method: 'POST', headers, body: '{}' })
    expect(minted.status).toBe(201)
    const { token } = (await minted.json()) as { token: string }
    const tokenFile = join(dir, 'init-token')
    writeFileSync(tokenFile, token + '\n', { mode: 0o600 })
    const stateDir = join(dir, 'agent-state')

    const enrolled = await run([
      BUN,
      'agent/gpuhq-agent.ts',
      'enroll',
      '--url',
      url,
      '--token-file',
      tokenFile,
      '--state-dir',
      stateDir,
      '--simulate',
      '3',
      '--log-level',
      'warn',
    ])
    expect({ code: enrolled.code, stderr: enrolled.stderr }).toMatchObject({ code: 0 })
    expect(statSync(join(stateDir, 'credential.json')).mode & 0o777).toBe(0o600)

    const list = async () =>
      (await (await fetch(`${url}/api/v1/servers`, { headers })).json()) as {
        items: { id: string; presence: string; gpu_count: number; agent_version: string | null }[]
      }
    const [server] = (await list()).items
    expect(server).toMatchObject({ presence: 'offline', gpu_count: 3 })

    const agent = Bun.spawn(
      [
        BUN,
        'agent/gpuhq-agent.ts',
        'run',
        '--state-dir',
        stateDir,
        '--simulate',
        '3',
        '--heartbeat-interval',
        '0.2',
        '--telemetry-interval',
        '0.2',
        '--log-level',
        'warn',
      ],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: dir },
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'pipe',
      },
    )
    children.push(agent)
    const online = await until(
      async () => {
        const row = (await list()).items.find((r) => r.id === server!.id)
        return row?.presence === 'online' ? row : null
      },
      15_000,
      'the server to come online',
    )
    expect(online.gpu_count).toBe(3)
    expect(online.agent_version).toMatch(/^\d+\.\d+\.\d+/)

    // Its telemetry reaches the server detail, one entry per simulated GPU.
    const detail = await until(
      async () => {
        const d = (await (await fetch(`${url}/api/v1/servers/${server!.id}`, { headers })).json()) as { telemetry: { gpus: { index: number }[] } }
        return d.telemetry.gpus.length === 3 ? d : null
      },
      15_000,
      'telemetry for three GPUs',
    )
    expect(detail.telemetry.gpus.map((g) => g.index)).toEqual([0, 1, 2])

    agent.kill('SIGTERM')
    expect(await Promise.race([agent.exited, Bun.sleep(10_000).then(() => 'timeout')])).toBe(0)
    await until(async () => ((await list()).items.find((r) => r.id === server!.id)?.presence === 'offline' ? true : null), 10_000, 'the server to go offline')
  }, 60_000)
})
