import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'

/**
 * The README's quickstart, run as written: every ```bash block of README.md, in order, in one bash
 * against the service started by scripts/start on a free port with a temp data dir. GPUHQ points the
 * blocks at it; HOME and XDG_STATE_HOME are temp dirs, so the secrets land where the README says.
 */

const REPO = join(import.meta.dir, '../..')
const BLOCKS = [...readFileSync(join(REPO, 'README.md'), 'utf8').matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)
// What an older README left in the repository; none of it may appear there now.
const LEFT_IN_REPO = ['jar', 'init-token', 'agent-state', 'pat.json', 'pat-header', 'init.json', 'account.txt', 'agent.pid', 'agent.log']

let dir: string
let port: number
let service: Subprocess<'ignore', 'pipe', 'pipe'>
let serviceErr = ''
const existedBefore = new Set(LEFT_IN_REPO.filter((f) => existsSync(join(REPO, f))))

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

function serviceEnv(): Record<string, string> {
  return {
    ...(process.env as Record<string, string>),
    PORT: String(port),
    DATA_DIR: join(dir, 'data'),
    DATABASE_URL: `file:${join(dir, 'data', 'gpuhq.db')}`,
    TEST_CLOCK: 'true',
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
  }
}

/** Runs README blocks in one bash, as a reader pasting them in order into one terminal. */
function runBlocks(blocks: string[], home: string) {
  const p = Bun.spawnSync(['bash', '-e', '-c', blocks.join('\n')], {
    cwd: REPO,
    env: { ...serviceEnv(), GPUHQ: `http://localhost:${port}`, HOME: home, XDG_STATE_HOME: join(home, 'state') },
  })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString(), q: join(home, 'state', 'gpuhq-quickstart') }
}

beforeAll(async () => {
  expect(BLOCKS.length).toBeGreaterThanOrEqual(4)
  dir = mkdtempSync(join(tmpdir(), 'gpuhq-readme-'))
  port = await freePort()
  service = Bun.spawn(['scripts/start'], { cwd: REPO, env: serviceEnv(), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  void (async () => {
    for await (const chunk of service.stderr) serviceErr += new TextDecoder().decode(chunk)
  })()
  void (async () => {
    for await (const _ of service.stdout);
  })()
  const deadline = Date.now() + 90_000
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.ok,
      () => false,
    )
    if (ok) break
    if (service.exitCode !== null || Date.now() > deadline) throw new Error(`scripts/start did not become ready:\n${serviceErr}`)
    await Bun.sleep(200)
  }
}, 120_000)

afterAll(async () => {
  service?.kill('SIGTERM')
  await service?.exited
  rmSync(dir, { recursive: true, force: true })
})

describe("the README's quickstart", () => {
  test('scripts/start announces where it listens only once it listens', () => {
    expect(serviceErr).toContain(
      `gpuhq listening on http://localhost:${port} — console: http://localhost:${port}/ — API docs: http://localhost:${port}/api/v1/docs`,
    )
    expect(serviceErr).not.toContain('starting on port')
  })

  test('runs as written: account, session, tokens, a simulated server listed by the token', () => {
    const home = mkdtempSync(join(dir, 'home-'))
    const r = runBlocks(BLOCKS, home)
    let agentPid: number | undefined
    try {
      agentPid = existsSync(join(r.q, 'agent.pid')) ? Number(readFileSync(join(r.q, 'agent.pid'), 'utf8')) : undefined
      expect({ code: r.code, err: r.err }).toMatchObject({ code: 0 })
      expect(r.out).toContain('{"status":"ok"}')
      expect(r.out).toContain('{"info":{"title":"gpuhq API"')
      expect(r.out).toContain('"code":"not_found"')
      expect(r.out).toContain('"email":"me@example.com"')
      expect(r.out).toContain('"role":"owner"')
      expect(r.out).toContain('token and init token saved in')
      // The listing read with the PAT shows the server the agent just enrolled, with its 2 GPUs.
      const listing = JSON.parse(
        r.out
          .trimEnd()
          .split('\n')
          .findLast((l) => l.includes('"items":['))!,
      )
      expect(listing.items).toMatchObject([{ gpu_count: 2 }])
      expect(r.out).toContain('"now":')

      // Every secret is in the state dir, readable by its owner only; nothing landed in the repo.
      expect(statSync(r.q).mode & 0o077).toBe(0)
      for (const f of ['jar', 'pat.json', 'pat-header', 'init.json', 'init-token', 'account.txt', 'agent-state/credential.json'])
        expect({ f, groupOrOther: statSync(join(r.q, f)).mode & 0o077 }).toEqual({ f, groupOrOther: 0 })
      expect(readFileSync(join(r.q, 'pat-header'), 'utf8')).toStartWith('authorization: Bearer gpuhq_pat_')
      expect(LEFT_IN_REPO.filter((f) => existsSync(join(REPO, f)) && !existedBefore.has(f))).toEqual([])
    } finally {
      if (agentPid) process.kill(agentPid, 'SIGTERM')
    }
  }, 120_000)

  test('a step that fails stops there with the problem document, and leaves no half-written token', () => {
    // The token step without having signed in: no session cookie in the jar.
    const home = mkdtempSync(join(dir, 'home-'))
    const tokens = BLOCKS.find((b) => b.includes('/tokens/init'))!
    const r = runBlocks([BLOCKS[0]!, tokens], home)
    expect(r.code).not.toBe(0)
    expect(r.err).toContain('"code":"unauthorized"')
    expect(readdirSync(r.q).filter((f) => f === 'init-token' || f === 'pat-header')).toEqual([])
  }, 60_000)
})
