import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestApp, TEST_SECRET_KEY } from '../support/app'

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
  const p = Bun.spawnSync([process.execPath, 'run', 'scripts/admin.ts', ...args], { env, cwd: join(import.meta.dir, '../..') })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
}

describe('operator commands', () => {
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
