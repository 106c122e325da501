/**
 * Hourly charge benchmark: one billing.charge run (runHourlyCharges booking exactly one hour) for
 * 10,000 tenants on starter with 100,000 servers, beside inserting the same number of plain,
 * ledger-shaped rows in one transaction into a plain table, fsynced once like the run. Never part of
 * the test run. Usage: `bun run bench/charges.ts` (see bench/README.md).
 */
import { Database } from 'bun:sqlite'
import { closeSync, fsyncSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../db/client'
import { runHourlyCharges } from '../src/modules/billing'
import { benchDeps } from './support'

const TENANTS = Number(process.env.BENCH_TENANTS ?? 10_000)
const SERVERS_PER_TENANT = Number(process.env.BENCH_SERVERS_PER_TENANT ?? 10)
const RUNS = Number(process.env.BENCH_RUNS ?? 3) // consecutive hours, each timed on its own
const US_PER_HOUR = 3_600_000_000
const H = Date.UTC(2027, 4, 12, 10) * 1000 // the first hour booked (May: 31 days)

const dir = mkdtempSync(join(tmpdir(), 'gpuhq-bench-charges-'))
const ms = (t: number) => `${t.toFixed(1)} ms`
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

try {
  const env = {
    NODE_ENV: 'test',
    TEST_CLOCK: 'true', // the clock is moved to the hour's booking moment instead of waiting for it
    DATA_DIR: dir,
    DATABASE_URL: `file:${join(dir, 'gpuhq.db')}`,
    SECRET_KEY: 'c'.repeat(64),
    PUBLIC_URL: 'http://127.0.0.1',
    LOG_LEVEL: 'warn',
  }
  const deps = await benchDeps(env, { warnings: true })
  // SQLite only (a file in a temp dir): the fixtures go in bulk over bun:sqlite's own connection, while
  // nothing else of this process runs, and the booked rows are counted there between the timed runs.
  const sqlite = deps.database.sqlite!
  /**
   * The frames in the WAL now: mxFrame of the WAL-index header at the start of the -shm file (a u32
   * at byte 16, in the machine's byte order), read without touching the connection.
   */
  const shm = openSync(join(dir, 'gpuhq.db-shm'), 'r')
  const header = Buffer.alloc(20)
  const walFrames = () => (readSync(shm, header, 0, 20, 0) === 20 ? header.readUInt32LE(16) : 0)
  console.log(
    `bun ${Bun.version}, ${cpus().length} cores; ${TENANTS.toLocaleString('en')} tenants on starter × ${SERVERS_PER_TENANT} servers = ${(TENANTS * SERVERS_PER_TENANT).toLocaleString('en')} servers; WAL; the charge run as the service makes it (synchronous=NORMAL, then one fsync of the WAL), the plain insert with synchronous=FULL (one fsync at its commit)\n`,
  )

  // Fixtures in bulk SQL: tenants, their servers (enrolled a day before the first hour), and a
  // 100 USD opening top-up each so no run crosses zero (the steady state, no grace transitions).
  let t0 = performance.now()
  const tenantIds: string[] = []
  sqlite.transaction(() => {
    const tenant = sqlite.prepare("INSERT INTO tenants (id, name, plan_code, account_state, created_at) VALUES (?, ?, 'starter', 'active', ?)")
    const server = sqlite.prepare('INSERT INTO servers (id, tenant_id, name, created_at) VALUES (?, ?, ?, ?)')
    const entry = sqlite.prepare(
      "INSERT INTO ledger_entries (id, tenant_id, seq, kind, amount_micros, balance_after_micros, occurred_at, detail, created_at) VALUES (?, ?, 1, 'topup', 100000000, 100000000, ?, 'opening top-up', ?)",
    )
    const balance = sqlite.prepare('INSERT INTO balances (tenant_id, balance_micros, last_seq, updated_at) VALUES (?, 100000000, 1, ?)')
    const enrolled = H - 24 * US_PER_HOUR
    for (let i = 0; i < TENANTS; i++) {
      const id = deps.newId()
      tenantIds.push(id)
      tenant.run(id, `tenant ${i}`, enrolled)
      for (let s = 0; s < SERVERS_PER_TENANT; s++) server.run(deps.newId(), id, `rig-${i}-${s}`, enrolled)
      entry.run(deps.newId(), id, enrolled, enrolled)
      balance.run(id, enrolled)
    }
    // Every hour before H is booked: the next run books H and nothing else.
    sqlite.prepare("INSERT INTO billing_state (key, charged_until, updated_at) VALUES ('charges', ?, ?)").run(H, enrolled)
  })()
  sqlite.exec('ANALYZE')
  console.log(`fixtures: ${ms(performance.now() - t0)}\n`)

  // One hourly run per hour H, H+1h, …: the clock sits at the hour + 1 h 16 min, so exactly that hour is due.
  const chargeTimes: number[] = []
  const longest: number[] = []
  const transactions: number[] = []
  const walPages: number[] = []
  // The process's CPU time (user + system) beside the wall time: it moves less with the machine's other load.
  const chargeCpu: number[] = []
  for (let r = 0; r < RUNS; r++) {
    const hour = H + r * US_PER_HOUR
    deps.testClock!.setNow(hour + 76 * 60_000_000)
    await deps.testClock!.saved // the test clock's offset is stored before the timing starts
    const held: number[] = []
    // Pages the run writes to the WAL: what each of its checkpoints found there, less what was there
    // before it began, plus what is there when it ends (each checkpoint starts the WAL over).
    let pages = -walFrames()
    let cpu = process.cpuUsage()
    t0 = performance.now()
    const detail = await runHourlyCharges(deps, { onTransaction: (ms) => held.push(ms), onCheckpoint: (n) => (pages += n) })
    // The hour on disk: the group commit's fsync of the WAL (nothing when every commit fsynced itself).
    await deps.durable.barrier()
    const took = performance.now() - t0
    cpu = process.cpuUsage(cpu)
    chargeCpu.push((cpu.user + cpu.system) / 1000)
    pages += walFrames()
    walPages.push(pages)
    longest.push(Math.max(...held))
    transactions.push(held.length)
    const booked = (sqlite.query("SELECT count(*) AS n FROM ledger_entries WHERE kind = 'charge' AND charge_hour = ?").get(hour) as { n: number }).n
    if (booked !== TENANTS) throw new Error(`expected ${TENANTS} charges for the hour, found ${booked} (${detail})`)
    chargeTimes.push(took)
    console.log(
      `charge run ${r + 1}: ${ms(took)} in ${held.length} write transactions, longest ${ms(Math.max(...held))}, ${pages} WAL pages written, CPU ${ms(chargeCpu.at(-1)!)}  (${detail})`,
    )
  }

  // Baseline: the same number of ledger-shaped rows, one transaction, a plain STRICT table
  // (primary key only: no secondary indexes, no triggers, no balance or calculation rows).
  const plainDb = openDatabase(join(dir, 'plain.db'))
  const plainSqlite = plainDb.sqlite!
  plainSqlite.exec(`CREATE TABLE plain_ledger (
    id TEXT PRIMARY KEY NOT NULL, tenant_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,
    amount_micros INTEGER NOT NULL, balance_after_micros INTEGER NOT NULL, occurred_at INTEGER NOT NULL,
    charge_day TEXT, charge_hour INTEGER, detail TEXT NOT NULL, calculation_id TEXT, payment_ref TEXT,
    created_at INTEGER NOT NULL) STRICT`)
  const plainTimes: number[] = []
  const plainCpu: number[] = []
  for (let r = 0; r < RUNS; r++) {
    const hour = H + r * US_PER_HOUR
    const insert = plainSqlite.prepare(
      "INSERT INTO plain_ledger (id, tenant_id, seq, kind, amount_micros, balance_after_micros, occurred_at, charge_day, charge_hour, detail, calculation_id, created_at) VALUES (?, ?, ?, 'charge', -26882, ?, ?, '2027-05-12', ?, '10 servers × starter 2.00 USD/month ÷ 31 days ÷ 24 h', ?, ?)",
    )
    let cpu = process.cpuUsage()
    t0 = performance.now()
    plainSqlite.exec('BEGIN IMMEDIATE')
    for (let i = 0; i < TENANTS; i++)
      insert.run(deps.newId(), tenantIds[i]!, r + 2, 100_000_000 - 26_882 * (r + 1), hour, hour, deps.newId(), hour + 76 * 60_000_000)
    plainSqlite.exec('COMMIT')
    const took = performance.now() - t0
    cpu = process.cpuUsage(cpu)
    plainTimes.push(took)
    plainCpu.push((cpu.user + cpu.system) / 1000)
    console.log(`plain insert ${r + 1}: ${ms(took)}, CPU ${ms(plainCpu.at(-1)!)}  (${TENANTS.toLocaleString('en')} rows, one transaction)`)
  }
  await plainDb.close()

  const floor = floorOfChargeRun(join(dir, 'floor.db'), tenantIds, () => deps.newId())
  const floorTimes: number[] = []
  const floorCpu: number[] = []
  const floorLongest: number[] = []
  for (let r = 0; r < RUNS; r++) {
    const hour = H + r * US_PER_HOUR
    let cpu = process.cpuUsage()
    t0 = performance.now()
    const { held, readMs } = floor.run(hour)
    const took = performance.now() - t0
    cpu = process.cpuUsage(cpu)
    floorTimes.push(took)
    floorCpu.push((cpu.user + cpu.system) / 1000)
    floorLongest.push(Math.max(...held))
    console.log(
      `floor of a charge run ${r + 1}: ${ms(took)} (the servers' read ${ms(readMs)}) in ${held.length} write transactions, longest ${ms(Math.max(...held))}, CPU ${ms(floorCpu.at(-1)!)}`,
    )
  }
  floor.close()

  const charge = median(chargeTimes)
  const plain = median(plainTimes)
  console.log(`\n| | median of ${RUNS} | per tenant |`)
  console.log('|---|---|---|')
  console.log(
    `| hourly charge run (${TENANTS.toLocaleString('en')} tenants, ${(TENANTS * SERVERS_PER_TENANT).toLocaleString('en')} servers) | ${ms(charge)} | ${((charge * 1000) / TENANTS).toFixed(1)} µs |`,
  )
  console.log(`| plain insert of ${TENANTS.toLocaleString('en')} rows | ${ms(plain)} | ${((plain * 1000) / TENANTS).toFixed(1)} µs |`)
  console.log(`| ratio charge / plain | ${(charge / plain).toFixed(1)}× | |`)
  console.log(
    `| … the same in CPU time (user + system), medians ${ms(median(chargeCpu))} / ${ms(median(plainCpu))} | ${(median(chargeCpu) / median(plainCpu)).toFixed(1)}× | |`,
  )
  const least = median(floorTimes)
  console.log(
    `| the floor of a charge run (below), median ${ms(least)}, CPU ${ms(median(floorCpu))}, longest transaction ${ms(Math.max(...floorLongest))}: floor / plain | ${(least / plain).toFixed(1)}× | ${((least * 1000) / TENANTS).toFixed(1)} µs |`,
  )
  console.log(`| … charge run / floor | ${(charge / least).toFixed(1)}× (CPU ${(median(chargeCpu) / median(floorCpu)).toFixed(1)}×) | |`)
  console.log(`| longest write transaction of any charge run = the longest a concurrent request waits for the write lock | ${ms(Math.max(...longest))} | |`)
  console.log(`| write transactions per charge run | ${transactions.join(', ')} | |`)
  console.log(
    `| WAL pages (4 KiB) a charge run wrote, median: each is written, fsynced, copied into the database file and fsynced again | ${median(walPages)} (${walPages.join(', ')}) | ${((median(walPages) * 4096) / TENANTS).toFixed(0)} bytes |`,
  )
  closeSync(shm)
  await deps.database.close()
} finally {
  rmSync(dir, { recursive: true, force: true })
}

/**
 * The floor of an hourly charge run (bench/README.md "The floor of a charge run"): what any
 * implementation of the specification's hourly charge must write, each step the cheapest way, on a
 * bare SQLite file in WAL mode, and nothing else. One read of the hour's managed servers grouped by
 * tenant (a covering index); per tenant, in transactions of 1,000 tenants (the batches gpuhq cuts at
 * 30 ms): the balance decremented with its new value returned, the calculation row with the server
 * ids the day's per-server CSV is made from, and the immutable ledger row (a UUID, the tenant's page
 * by occurred_at, and "one charge per tenant and hour" as a unique index, which is exactly-once);
 * SQLite's own automatic checkpoints; one fsync of the WAL at the end. No sequence numbers, foreign
 * keys, triggers, plans, watermark, account states, audit or batch sizing.
 */
function floorOfChargeRun(path: string, tenants: string[], newId: () => string) {
  const db = new Database(path, { create: true, strict: true })
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = NORMAL')
  db.exec(`CREATE TABLE servers (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, created_at INTEGER NOT NULL, decommissioned_at INTEGER) STRICT;
    CREATE INDEX servers_tenant ON servers (tenant_id, created_at, decommissioned_at, id);
    CREATE TABLE balances (tenant_id TEXT PRIMARY KEY, balance_micros INTEGER NOT NULL) STRICT, WITHOUT ROWID;
    CREATE TABLE calculations (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, charge_hour INTEGER NOT NULL, servers INTEGER NOT NULL, server_ids TEXT NOT NULL, amount_micros INTEGER NOT NULL) STRICT, WITHOUT ROWID;
    CREATE TABLE ledger (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, kind TEXT NOT NULL, amount_micros INTEGER NOT NULL, balance_after_micros INTEGER NOT NULL,
      occurred_at INTEGER NOT NULL, charge_day TEXT, charge_hour INTEGER, detail TEXT NOT NULL, calculation_id TEXT, created_at INTEGER NOT NULL) STRICT, WITHOUT ROWID;
    CREATE INDEX ledger_tenant_occurred ON ledger (tenant_id, occurred_at);
    CREATE UNIQUE INDEX ledger_one_charge_per_hour ON ledger (charge_hour, tenant_id) WHERE kind = 'charge';`)
  const enrolled = H - 24 * US_PER_HOUR
  db.transaction(() => {
    const server = db.prepare('INSERT INTO servers (id, tenant_id, created_at) VALUES (?, ?, ?)')
    const balance = db.prepare('INSERT INTO balances (tenant_id, balance_micros) VALUES (?, 100000000)')
    for (const tenant of tenants) {
      for (let s = 0; s < SERVERS_PER_TENANT; s++) server.run(newId(), tenant, enrolled)
      balance.run(tenant)
    }
  })()
  db.exec('ANALYZE')
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  const managed = db.prepare(
    'SELECT tenant_id, count(*) AS n, json_group_array(id) AS ids FROM servers WHERE created_at < ?1 AND (decommissioned_at IS NULL OR decommissioned_at > ?1) GROUP BY tenant_id',
  )
  const debit = db.prepare('UPDATE balances SET balance_micros = balance_micros - ? WHERE tenant_id = ? RETURNING balance_micros')
  const calculation = db.prepare('INSERT INTO calculations (id, tenant_id, charge_hour, servers, server_ids, amount_micros) VALUES (?, ?, ?, ?, ?, ?)')
  const entry = db.prepare(
    "INSERT INTO ledger (id, tenant_id, kind, amount_micros, balance_after_micros, occurred_at, charge_day, charge_hour, detail, calculation_id, created_at) VALUES (?, ?, 'charge', ?, ?, ?, ?, ?, ?, ?, ?)",
  )
  const wal = `${path}-wal`
  return {
    /** Books `hour` for every tenant: the time each write transaction held the lock, and the servers' read. */
    run(hour: number): { held: number[]; readMs: number } {
      const began = performance.now()
      const rows = managed.all(hour) as { tenant_id: string; n: number; ids: string }[]
      const readMs = performance.now() - began
      const day = new Date(hour / 1000).toISOString().slice(0, 10)
      const held: number[] = []
      for (let from = 0; from < rows.length; from += 1000) {
        const began = performance.now()
        db.exec('BEGIN IMMEDIATE')
        for (const row of rows.slice(from, from + 1000)) {
          // starter: 2.00 USD a server and month of 31 days, by the hour, in micro-USD.
          const amount = Math.round((row.n * 2_000_000) / 31 / 24)
          const after = (debit.get(amount, row.tenant_id) as { balance_micros: number }).balance_micros
          const calculationId = newId()
          calculation.run(calculationId, row.tenant_id, hour, row.n, row.ids, amount)
          entry.run(newId(), row.tenant_id, -amount, after, hour, day, hour, `${row.n} servers × starter`, calculationId, hour + 76 * 60_000_000)
        }
        db.exec('COMMIT')
        held.push(performance.now() - began)
      }
      const fd = openSync(wal, 'r+')
      fsyncSync(fd)
      closeSync(fd)
      return { held, readMs }
    },
    close: () => db.close(),
  }
}
