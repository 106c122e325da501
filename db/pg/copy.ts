import type { Database } from 'bun:sqlite'
import { is } from 'drizzle-orm'
import { getTableConfig, SQLiteTable } from 'drizzle-orm/sqlite-core'
import * as schema from '../schema'
import type { PgExecutor } from './pool'

/** Rows per INSERT statement: few round trips, statements well below PostgreSQL's 65535 parameters. */
const BATCH_ROWS = 500

/** Tables in an order where every foreign key points at a table copied before it. */
function tablesInKeyOrder(): { name: string; columns: string[]; serial: string | null }[] {
  const configs = (Object.values(schema).filter((t) => is(t, SQLiteTable)) as SQLiteTable[]).map(getTableConfig)
  const byName = new Map(configs.map((c) => [c.name, c]))
  const done = new Set<string>()
  const out: { name: string; columns: string[]; serial: string | null }[] = []
  const visit = (name: string, path: Set<string>) => {
    if (done.has(name)) return
    if (path.has(name)) throw new Error(`foreign keys form a cycle through ${name}`)
    path.add(name)
    const c = byName.get(name)!
    for (const fk of c.foreignKeys) {
      const target = getTableConfig(fk.reference().foreignTable).name
      if (target !== name) visit(target, path)
    }
    done.add(name)
    const serial = c.columns.find((col) => col.primary && (col as unknown as { autoIncrement?: boolean }).autoIncrement)?.name ?? null
    out.push({ name, columns: c.columns.map((col) => col.name), serial })
  }
  for (const c of configs) visit(c.name, new Set())
  return out
}

/**
 * Copies every row of a SQLite database of this build into a PostgreSQL database of this build
 * (both migrated), in one transaction: all of it lands, or nothing. The target must hold no data
 * but the rows its migrations seed (the plan catalogue, the credentials' change counter), which the source's replace. Answers the
 * rows copied per table. `scripts/admin migrate-to-postgres` runs it (docs/operations.md).
 */
/** Tables whose rows the migrations write: the source's replace them. */
const SEEDED = new Set(['plans', 'auth_epoch'])

export async function copySqliteToPostgres(source: Database, target: PgExecutor): Promise<{ table: string; rows: number }[]> {
  const tables = tablesInKeyOrder()
  const copied: { table: string; rows: number }[] = []
  await target.transaction(async () => {
    for (const t of tables) {
      if (SEEDED.has(t.name)) continue
      const n = ((await target.objects(`SELECT count(*) AS n FROM "${t.name}"`, []))[0] as { n: number }).n
      if (n > 0) throw new Error(`the PostgreSQL database is not empty: ${t.name} holds ${n} rows`)
    }
    // The catalogue the migrations seeded gives way to the source's (which an operator may have
    // edited), and so does the credentials' change counter.
    await target.exec('TRUNCATE plans, auth_epoch CASCADE')
    for (const t of tables) {
      const list = t.columns.map((c) => `"${c}"`).join(', ')
      const select = source.query(`SELECT ${list} FROM "${t.name}"`)
      let rows = 0
      let batch: unknown[][] = []
      const flush = async () => {
        if (batch.length === 0) return
        const values = batch.map((_, r) => `(${t.columns.map((_, c) => `$${r * t.columns.length + c + 1}`).join(', ')})`).join(', ')
        await target.run(`INSERT INTO "${t.name}" (${list}) VALUES ${values}`, batch.flat())
        rows += batch.length
        batch = []
      }
      for (const row of select.iterate() as Iterable<Record<string, unknown>>) {
        batch.push(t.columns.map((c) => row[c]))
        if (batch.length >= BATCH_ROWS) await flush()
      }
      await flush()
      if (t.serial)
        await target.exec(
          `SELECT setval(pg_get_serial_sequence('"${t.name}"', '${t.serial}'), coalesce((SELECT max("${t.serial}") FROM "${t.name}"), 0) + 1, false)`,
        )
      copied.push({ table: t.name, rows })
    }
  })
  return copied
}
