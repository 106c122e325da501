import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { startService } from '../../src/service'
import { freePort, startTestApp, TEST_SECRET_KEY } from '../support/app'

const dir = mkdtempSync(join(tmpdir(), 'gpuhq-admin-'))
const env = {
  ...process.env,
  DATA_DIR: dir,
  DATABASE_URL: `file:${join(dir, 'gpuhq.db')}`,
  SECRET_KEY: TEST_SECRET_KEY,
  PUBLIC_URL: 'http://gpuhq.test',
  LOG_LEVEL: 'warn',
}
afterAll(() => rmSync(dir, { recursive: true, force: true }))

// Each admin() call starts a Bun process: a fraction of a second on an idle machine, seconds on a
// loaded two-core one, and a test here makes up to 5 of them, one after another.
const PROCESS_TEST_MS = 120_000

function admin(...args: string[]) {
  return adminWith(env, ...args)
}
function adminWith(environment: Record<string, string | undefined>, ...args: string[]) {
  const p = Bun.spawnSync([process.execPath, 'run', 'scripts/admin.ts', ...args], { env: environment, cwd: join(import.meta.dir, '../..') })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
}

describe('operator commands', () => {
  test(
    "create-account prints the link where the service answers: this shell's PUBLIC_URL, else the address the service started with",
    async () => {
      const own = mkdtempSync(join(tmpdir(), 'gpuhq-admin-url-'))
      const files = { DATA_DIR: own, DATABASE_URL: `file:${join(own, 'gpuhq.db')}` }
      try {
        const port = freePort()
        // The service started in another shell on another port: its own address is kept.
        const { PUBLIC_URL: _drop, ...withoutUrl } = env
        const service = await startService(loadConfig({ ...withoutUrl, ...files, PORT: String(port), NODE_ENV: 'test' } as Record<string, string>))
        await service.stop()
        const plain = adminWith({ ...withoutUrl, ...files, PORT: undefined }, 'create-account', '--email', 'url@example.com', '--tenant-name', 'Url rigs')
        expect(plain.err).toBe('')
        expect(plain.out).toContain(`curl -s -c jar -X POST http://localhost:${port}/api/v1/auth/password-reset/complete`)
        const mine = adminWith(
          { ...env, ...files, PUBLIC_URL: 'https://rigs.example' },
          'create-account',
          '--email',
          'url2@example.com',
          '--tenant-name',
          'Url 2',
        )
        expect(mine.out).toContain('curl -s -c jar -X POST https://rigs.example/api/v1/auth/password-reset/complete')
      } finally {
        rmSync(own, { recursive: true, force: true })
      }
    },
    PROCESS_TEST_MS,
  )

  test(
    'create-account makes a tenant on the free plan and a ticket the owner uses to set a password and sign in',
    async () => {
      const r = admin('create-account', '--email', 'Owner@Example.com', '--tenant-name', 'North rigs')
      expect(r.code).toBe(0)
      expect(r.out).toContain('plan free')
      const ticket = /ticket to set the password[^:]*: (\S+)/.exec(r.out)![1]!
      // The line it prints keeps the session cookie that setting the password answers with.
      expect(r.out).toContain(`curl -s -c jar -X POST http://gpuhq.test/api/v1/auth/password-reset/complete`)

      const app = await startTestApp({ DATABASE_URL: env.DATABASE_URL, DATA_DIR: dir })
      try {
        const set = await app.fetch('/api/v1/auth/password-reset/complete', { method: 'POST', json: { ticket, password: 'a long and private passphrase' } })
        expect(set.status).toBe(200)
        expect(((await set.json()) as { role: string }).role).toBe('owner')
        const again = await app.fetch('/api/v1/auth/password-reset/complete', { method: 'POST', json: { ticket, password: 'another long passphrase' } })
        expect(again.status).toBe(401)
        const signin = await app.fetch('/api/v1/auth/sessions', {
          method: 'POST',
          json: { email: 'owner@example.com', password: 'a long and private passphrase' },
        })
        expect(signin.status).toBe(201)
      } finally {
        await app.close().catch(() => {})
      }

      const list = admin('tenants')
      expect(list.code).toBe(0)
      expect(list.out).toMatch(/plan=free\s+state=active.*North rigs/)
    },
    PROCESS_TEST_MS,
  )

  test(
    'a second account with the same email, a malformed email or an unknown option is refused with one clear line',
    () => {
      for (const [args, message] of [
        [['create-account', '--email', 'owner@example.com', '--tenant-name', 'Again'], 'already exists'],
        [['create-account', '--email', 'not-an-email', '--tenant-name', 'X'], 'is not an email address'],
        [['create-account', '--tenant-name', 'X'], '--email is required'],
        [['create-account', '--bogus'], "Unknown option '--bogus'"],
        [['frobnicate'], 'unknown command'],
      ] as const) {
        const r = admin(...args)
        expect(r.code).toBe(2)
        expect(r.err.split('\n')[0]).toContain(message)
      }
    },
    PROCESS_TEST_MS,
  )
})
