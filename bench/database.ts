/**
 * The price of one statement and of one write transaction through the service's data layer
 * (db/client.ts: Drizzle's query builder over an executor, `withTransaction`), each awaited, on
 * SQLite (db/sqlite-executor.ts) and on PostgreSQL behind the same asynchronous interface
 * (db/pg/pool.ts: a pool on this thread's event loop, one round trip per statement).
 * docs/scale-out.md quotes it.
 *
 *   PATH="$PWD/.tools/node_modules/.bin:$PATH" bun run bench/database.ts
 *   # knobs: BENCH_PG_URL=postgres://user@127.0.0.1:5432/postgres (else a throwaway cluster is
 *   #        started with scripts/lib.sh), BENCH_QUERIES=5000 BENCH_TRANSACTIONS=500
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq, sql } from 'drizzle-orm'
import { type Database_, migrateDatabase, openDatabase, withTransaction } from '../db/client'
import { serviceSettings, testProbes } from '../db/schema'
import { benchPostgres } from './support'

const QUERIES = Number(process.env.BENCH_QUERIES ?? 5000)
const TRANSACTIONS = Number(process.env.BENCH_TRANSACTIONS ?? 500)

type Row = { database: string; what: string; n: number; us: number }

async function measure(database: Database_, label: string): Promise<Row[]> {
  const { db } = database
  const find = db
    .select()
    .from(serviceSettings)
    .where(eq(serviceSettings.key, sql.placeholder('key')))
    .prepare()
  await withTransaction(db, (tx) => tx.insert(serviceSettings).values({ key: 'bench', value: '0', updatedAt: 0 }).run())
  for (let i = 0; i < 200; i++) await find.get({ key: 'bench' }) // warm-up
  let t = performance.now()
  for (let i = 0; i < QUERIES; i++) await find.get({ key: 'bench' })
  const query = ((performance.now() - t) * 1000) / QUERIES
  t = performance.now()
  for (let i = 0; i < QUERIES; i++)
    await db
      .select()
      .from(testProbes)
      .where(eq(testProbes.id, `p${i}`))
      .get()
  const built = ((performance.now() - t) * 1000) / QUERIES
  t = performance.now()
  for (let i = 0; i < TRANSACTIONS; i++)
    await withTransaction(db, async (tx) => {
      await tx
        .insert(testProbes)
        .values({ id: `p${i}`, value: 'x', version: 1, createdAt: i })
        .run()
      await tx
        .update(serviceSettings)
        .set({ value: String(i), updatedAt: i })
        .where(eq(serviceSettings.key, 'bench'))
        .run()
    })
  const transaction = ((performance.now() - t) * 1000) / TRANSACTIONS
  return [
    { database: label, what: 'one prepared primary-key SELECT', n: QUERIES, us: query },
    { database: label, what: 'one SELECT built by the query builder', n: QUERIES, us: built },
    { database: label, what: 'one write transaction (INSERT + UPDATE, committed durably)', n: TRANSACTIONS, us: transaction },
  ]
}

const rows: Row[] = []
const dir = mkdtempSync(join(tmpdir(), 'gpuhq-bench-db-'))
try {
  // The service's SQLite settings with each commit fsynced (what scripts/admin runs): a durable commit, as on PostgreSQL.
  const lite = openDatabase(join(dir, 'bench.db'))
  await migrateDatabase(lite)
  rows.push(...(await measure(lite, 'SQLite (WAL, synchronous=FULL)')))
  await lite.close()

  const pg = await benchPostgres()
  try {
    const database = openDatabase(pg.url)
    await migrateDatabase(database)
    rows.push(...(await measure(database, 'PostgreSQL (loopback, fsync on)')))
    const counters = database.postgres!.counters
    await database.close()
    console.log(`PostgreSQL: ${counters.statements} round trips, ${counters.transactions} transactions, ${counters.retries} retried`)
  } finally {
    await pg.stop()
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}

console.log('\n| database | what | n | µs each |\n|---|---|---|---|')
for (const r of rows) console.log(`| ${r.database} | ${r.what} | ${r.n} | ${r.us.toFixed(1)} |`)
