import { afterAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { statSync } from 'node:fs'
import { withTransaction } from '../../db/client'
import { runHourlyCharges } from '../../src/modules/billing'
import { startTestApp, type TestApp } from '../support/app'
import { clockTo, doubleCharges, US_PER_HOUR, US_PER_MINUTE, utcUs } from '../support/billing'

/**
 * A charge batch is sized by the WAL pages it writes, not only by its tenants (docs/billing.md
 * "Exactly once"): with a long ledger history each tenant's charge dirties a page of every index led
 * by the tenant, and a batch of 1000 such tenants wrote more pages than SQLite's automatic
 * checkpoint allows the WAL (1000), so SQLite copied the WAL back into the database inside that
 * batch's COMMIT, with the write lock held (bench/charges.ts with BENCH_RUNS=120: transactions of
 * 60 to 90 ms). Here 600 tenants with 120 ledger entries each, two hours booked: the second hour's
 * batches never bring the WAL to that size (its file grows to the most frames it ever held). On
 * PostgreSQL there is no WAL file of ours: the charges are checked alone.
 */
const TENANTS = 600
const HISTORY = 120
const H0 = utcUs(2027, 3, 1, 8)

let app: TestApp
afterAll(() => app.close())

test('a batch of tenants with a long history never brings the WAL to the size at which SQLite checkpoints inside its commit', async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  const enrolled = H0 - (HISTORY + 24) * US_PER_HOUR
  await clockTo(app, H0 + 10 * US_PER_MINUTE)
  await withTransaction(app.deps.db, async (tx) => {
    for (let i = 0; i < TENANTS; i++) {
      const id = app.deps.newId()
      await tx.run(sql`INSERT INTO tenants (id, name, plan_code, account_state, created_at) VALUES (${id}, ${`paged ${i}`}, 'starter', 'active', ${enrolled})`)
      await tx.run(sql`INSERT INTO servers (id, tenant_id, name, created_at) VALUES (${app.deps.newId()}, ${id}, 'rig', ${enrolled})`)
      await tx.run(sql`INSERT INTO balances (tenant_id, balance_micros, last_seq, updated_at) VALUES (${id}, ${HISTORY * 1_000_000}, ${HISTORY}, ${enrolled})`)
    }
    // Each tenant's history: HISTORY credits of 1 USD, an hour apart, before H0.
    await tx.run(
      sql`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${HISTORY})
        INSERT INTO ledger_entries (id, tenant_id, seq, kind, amount_micros, balance_after_micros, occurred_at, detail, created_at)
        SELECT t.id || '-' || CAST(n.i AS text), t.id, n.i, 'adjustment', 1000000, n.i * 1000000, CAST(${enrolled} AS bigint) + n.i * ${US_PER_HOUR}, 'history', CAST(${enrolled} AS bigint) + n.i * ${US_PER_HOUR}
        FROM tenants t CROSS JOIN n WHERE t.name LIKE 'paged %'`,
    )
    await tx.run(sql`INSERT INTO billing_state (key, charged_until, updated_at) VALUES ('charges', ${H0}, ${enrolled})`)
  })
  const sqlite = app.deps.database.sqlite
  // The WAL starts over empty (its file too): its size after the run is the most frames it held.
  const emptyWal = () => sqlite?.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  emptyWal()
  // A run with no batch time limit, so only tenants and pages cut a batch, whatever the machine's speed.
  const run = async (hour: number) => {
    await clockTo(app, hour + US_PER_HOUR + 30 * US_PER_MINUTE)
    expect(await runHourlyCharges(app.deps, { batchBudgetMs: 60_000 })).toContain(`booked 1 hours (${TENANTS} charges)`)
  }
  await run(H0) // the first hour measures what a tenant writes
  emptyWal()
  await run(H0 + US_PER_HOUR)
  expect(await doubleCharges(app)).toEqual([])
  const charged = (await app.deps.db.get(sql`SELECT count(*) AS n FROM ledger_entries WHERE kind = 'charge'`)) as { n: number }
  expect(Number(charged.n)).toBe(2 * TENANTS)
  if (!sqlite) return
  const limit = (sqlite.query('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint
  const pageSize = (sqlite.query('PRAGMA page_size').get() as { page_size: number }).page_size
  const walFile = `${app.databaseUrl.replace(/^file:/, '')}-wal`
  const mostFrames = Math.floor((statSync(walFile).size - 32) / (pageSize + 24))
  expect(mostFrames).toBeGreaterThan(0)
  expect(mostFrames).toBeLessThan(limit)
})
