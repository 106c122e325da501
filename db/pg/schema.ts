import { getTableName, is, SQL } from 'drizzle-orm'
import {
  bigint,
  bigserial,
  customType,
  doublePrecision,
  foreignKey,
  index,
  type PgColumnBuilderBase,
  type PgTable,
  pgTable,
  primaryKey,
  text,
  unique,
  uniqueIndex,
} from 'drizzle-orm/pg-core'
import { getTableConfig, type SQLiteColumn, SQLiteTable } from 'drizzle-orm/sqlite-core'
import * as sqliteSchema from '../schema'

/**
 * The PostgreSQL schema, derived from the one schema definition (db/schema/, SQLite) and never kept
 * by hand: every table, column, default, primary key, unique and plain index (with its WHERE) and
 * foreign key is read from Drizzle's `getTableConfig` and rebuilt with pg-core. `bun run
 * db:generate` diffs it against db/migrations-pg/'s last snapshot and writes the PostgreSQL
 * migration beside the SQLite one (db/pg/generate.ts); tests/platform/pg-schema.test.ts proves the
 * two stay in step.
 *
 * Types: SQLite `integer` (times in µs, money in micro-USD, counts, booleans stored as 0/1) is
 * `bigint`; `real` is `double precision`; `text` (JSON included: Drizzle stores it as text) is
 * `text`; `blob` is `bytea`. Booleans stay integers so that the rows, the statements and the
 * comparisons the repositories write are the same on both databases.
 */

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' })

/** The PostgreSQL type a SQLite column of this declared type becomes. */
export function pgTypeOf(column: SQLiteColumn): 'bigint' | 'bigserial' | 'double precision' | 'text' | 'bytea' {
  const type = column.getSQLType()
  if (type === 'integer') return column.primary && (column as unknown as { autoIncrement?: boolean }).autoIncrement ? 'bigserial' : 'bigint'
  if (type === 'real') return 'double precision'
  if (type === 'blob') return 'bytea'
  if (type === 'text') return 'text'
  throw new Error(`no PostgreSQL type for SQLite ${type} (column ${column.name})`)
}

/** What columnOf chains on every pg-core builder (their own types differ per column type). */
type Chain = { notNull(): Chain; primaryKey(): Chain; unique(name?: string): Chain; default(value: unknown): Chain }

function columnOf(column: SQLiteColumn): PgColumnBuilderBase {
  let b: Chain
  switch (pgTypeOf(column)) {
    case 'bigserial':
      b = bigserial(column.name, { mode: 'number' }) as unknown as Chain
      break
    case 'bigint':
      b = bigint(column.name, { mode: 'number' }) as unknown as Chain
      break
    case 'double precision':
      b = doublePrecision(column.name) as unknown as Chain
      break
    case 'bytea':
      b = bytea(column.name) as unknown as Chain
      break
    default:
      b = text(column.name) as unknown as Chain
  }
  if (column.primary) b = b.primaryKey()
  else if (column.notNull) b = b.notNull()
  if (column.default !== undefined && column.default !== null) b = b.default(is(column.default, SQL) ? column.default : column.mapToDriverValue(column.default))
  if (column.isUnique) b = b.unique(column.uniqueName)
  return b as unknown as PgColumnBuilderBase
}

function build(): Record<string, PgTable> {
  const sqliteTables = Object.values(sqliteSchema).filter((t) => is(t, SQLiteTable)) as SQLiteTable[]
  const out: Record<string, PgTable> = {}
  for (const source of sqliteTables) {
    const config = getTableConfig(source)
    const columns: Record<string, PgColumnBuilderBase> = {}
    for (const c of config.columns) columns[c.name] = columnOf(c)
    out[config.name] = pgTable(config.name, columns, (t) => {
      const col = (c: { name: string }) => (t as Record<string, never>)[c.name]!
      const extras = []
      for (const pk of config.primaryKeys) extras.push(primaryKey({ name: pk.getName(), columns: pk.columns.map(col) as [never, ...never[]] }))
      for (const u of config.uniqueConstraints) extras.push(unique(u.getName()).on(...(u.columns.map(col) as [never, ...never[]])))
      for (const ix of config.indexes) {
        const { name, columns: on, unique: isUnique, where } = ix.config
        const b = (isUnique ? uniqueIndex(name) : index(name)).on(...(on.map((c) => col(c as SQLiteColumn)) as [never, ...never[]]))
        extras.push(where ? b.where(where) : b)
      }
      for (const fk of config.foreignKeys) {
        const ref = fk.reference()
        const target = out[getTableName(ref.foreignTable)]
        if (!target) throw new Error(`foreign key of ${config.name} to a table defined after it: ${getTableName(ref.foreignTable)}`)
        let b = foreignKey({
          name: fk.getName(),
          columns: ref.columns.map(col) as [never, ...never[]],
          foreignColumns: ref.foreignColumns.map((c) => (target as unknown as Record<string, never>)[c.name]!) as [never, ...never[]],
        })
        if (fk.onDelete) b = b.onDelete(fk.onDelete)
        if (fk.onUpdate) b = b.onUpdate(fk.onUpdate)
        extras.push(b)
      }
      return extras
    })
  }
  return out
}

/** Every table of db/schema as a pg-core table, by table name. */
export const pgTables: Record<string, PgTable> = build()
