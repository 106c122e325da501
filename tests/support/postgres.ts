import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { type Db, migrateDatabase, openDatabase } from '../../db/client'

/**
 * The suite on PostgreSQL (docs/scale-out.md): with GPUHQ_TEST_DATABASE=postgres and
 * GPUHQ_TEST_PG_URL naming a throwaway cluster's maintenance database (scripts/lib.sh
 * `start_test_postgres`), every test app gets a fresh database copied from a migrated template:
 * `CREATE DATABASE … TEMPLATE` copies files, far faster than migrating each one.
 */
export const onPostgres = process.env.GPUHQ_TEST_DATABASE === 'postgres'

function adminUrl(): string {
  const url = process.env.GPUHQ_TEST_PG_URL
  if (!url) throw new Error('GPUHQ_TEST_DATABASE=postgres needs GPUHQ_TEST_PG_URL (scripts/test sets both)')
  return url
}

function urlOf(database: string): string {
  const u = new URL(adminUrl())
  u.pathname = `/${database}`
  return u.toString()
}

/** The template's name changes with the migrations, so a cluster kept between runs never serves a stale schema. */
function templateName(): string {
  const dir = join(import.meta.dir, '..', '..', 'db', 'migrations-pg')
  const h = createHash('sha256')
  for (const f of readdirSync(dir).sort()) if (f.endsWith('.sql')) h.update(readFileSync(join(dir, f)))
  return `gpuhq_template_${h.digest('hex').slice(0, 12)}`
}

let template: Promise<string> | null = null

async function ensureTemplate(): Promise<string> {
  const name = templateName()
  const admin = new Bun.SQL(adminUrl(), { max: 1 })
  try {
    const found = await admin.unsafe('SELECT 1 FROM pg_database WHERE datname = $1', [name])
    if (found.length) return name
    const building = `${name}_${process.pid}_${Date.now()}`
    await admin.unsafe(`CREATE DATABASE ${building}`)
    const database = openDatabase(urlOf(building))
    try {
      await migrateDatabase(database)
    } finally {
      await database.close()
    }
    try {
      await admin.unsafe(`ALTER DATABASE ${building} RENAME TO ${name}`)
    } catch {
      // Another process made it first.
      await admin.unsafe(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`)
    }
    return name
  } finally {
    await admin.close()
  }
}

/** A fresh, migrated database of its own: its URL and a function that drops it. */
export async function freshPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  template ??= ensureTemplate()
  const from = await template
  const name = `gpuhq_t_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  const admin = new Bun.SQL(adminUrl(), { max: 1 })
  try {
    await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${from}`)
  } finally {
    await admin.close()
  }
  return {
    url: urlOf(name),
    drop: async () => {
      const a = new Bun.SQL(adminUrl(), { max: 1 })
      try {
        await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await a.close()
      }
    },
  }
}

/** The service's tables, on either database (sqlite_master is SQLite's catalogue, pg_tables PostgreSQL's). */
export async function tableNames(db: Db): Promise<string[]> {
  const rows = await db.all<{ name: string }>(
    onPostgres
      ? sql`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE '\\_\\_drizzle%'`
      : sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%'`,
  )
  return rows.map((r) => r.name)
}

/**
 * Everything the database stores, as text, to show a secret is not in it: on SQLite the bytes of
 * the database file and its WAL in `dir`; on PostgreSQL (whose files are the server's) every value
 * of every row, bytes read as latin1.
 */
export async function storedText(db: Db, dir: string): Promise<string> {
  if (!onPostgres) {
    const files = readdirSync(dir).filter((f) => f.startsWith('gpuhq.db'))
    if (files.length === 0) throw new Error(`no database file in ${dir}`)
    return files.map((f) => readFileSync(join(dir, f)).toString('latin1')).join('\n')
  }
  const out: string[] = []
  for (const name of await tableNames(db))
    for (const row of await db.all<Record<string, unknown>>(sql`SELECT * FROM ${sql.identifier(name)}`))
      for (const v of Object.values(row)) out.push(v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : String(v))
  return out.join('\n')
}
