import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestApp, TEST_SECRET_KEY } from '../support/app'
import { newOwner } from '../support/fleet'
import { freshPostgresDatabase, onPostgres } from '../support/postgres'

/**
 * `scripts/admin migrate-to-postgres` moves a SQLite deployment to PostgreSQL (docs/operations.md
 * "Moving to PostgreSQL"): every row, one transaction, and the service on PostgreSQL carries on
 * where the SQLite one stopped. Only in scripts/test's PostgreSQL pass, which has a cluster.
 */
const dir = mkdtempSync(join(tmpdir(), 'gpuhq-move-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function admin(databaseUrl: string, ...args: string[]) {
  const env = { ...process.env, DATA_DIR: dir, DATABASE_URL: databaseUrl, SECRET_KEY: TEST_SECRET_KEY, PUBLIC_URL: 'http://gpuhq.test', LOG_LEVEL: 'warn' }
  const p = Bun.spawnSync([process.execPath, 'run', 'scripts/admin.ts', ...args], { env, cwd: join(import.meta.dir, '../..') })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
}

describe.skipIf(!onPostgres)('moving a SQLite deployment to PostgreSQL', () => {
  test('every row arrives: the owner signed in on SQLite is still signed in, with its groups and balance', async () => {
    const file = join(dir, 'gpuhq.db')
    const lite = await startTestApp({ DATABASE_URL: `file:${file}`, DATA_DIR: dir })
    const owner = await newOwner(lite, 'moving', 'pro')
    const group = await lite.fetch('/api/v1/groups', { method: 'POST', headers: owner.headers, json: { name: 'north rack' } })
    expect(group.status).toBe(201)
    await lite.close()

    const target = await freshPostgresDatabase()
    try {
      const r = admin(target.url, 'migrate-to-postgres', '--from', file)
      expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' })
      expect(r.out).toMatch(/copied \d+ rows of \d+ tables/)
      expect(r.out).toContain('tenants: 1 rows')

      const pg = await startTestApp({ DATABASE_URL: target.url, DATA_DIR: dir })
      try {
        const me = await pg.fetch('/api/v1/me', { headers: owner.headers })
        expect(me.status).toBe(200)
        const groups = (await (await pg.fetch('/api/v1/groups', { headers: owner.headers })).json()) as { items: { name: string }[] }
        expect(groups.items.map((g) => g.name)).toEqual(['north rack'])
        const plans = (await (await pg.fetch('/api/v1/plans', { headers: owner.headers })).json()) as { items: { code: string }[] }
        expect(plans.items.map((p) => p.code)).toContain('pro')
      } finally {
        await pg.close()
      }

      // A second run refuses: the target is no longer empty, and nothing is copied twice.
      const again = admin(target.url, 'migrate-to-postgres', '--from', file)
      expect(again.code).toBe(2)
      expect(again.err).toContain('is not empty')
    } finally {
      await target.drop()
    }
  }, 120_000)

  test('refuses without a PostgreSQL DATABASE_URL or a source file, with one line and exit 2', () => {
    const r = admin(`file:${join(dir, 'other.db')}`, 'migrate-to-postgres', '--from', join(dir, 'gpuhq.db'))
    expect(r.code).toBe(2)
    expect(r.err).toContain('DATABASE_URL must name the PostgreSQL database')
  }, 60_000)
})
