import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { eq, is, SQL, sql } from 'drizzle-orm'
import { getTableConfig, SQLiteTable } from 'drizzle-orm/sqlite-core'
import * as schema from '../../db/schema'
import { serviceSettings } from '../../db/schema'
import { currentPgSnapshot } from '../../db/pg/generate'
import { pgTypeOf } from '../../db/pg/schema'
import { databaseOver, PostgresFlavouredDialect } from '../../db/session'

/**
 * The PostgreSQL schema is derived from the SQLite one (db/pg/schema.ts) and its migrations are
 * generated with it (`bun run db:generate`): these tests fail when a table, column or index of
 * db/schema has no matching PostgreSQL migration, so the two can never drift apart.
 */
type Snapshot = {
  tables: Record<
    string,
    {
      name: string
      columns: Record<string, { name: string; type: string; primaryKey: boolean; notNull: boolean; default?: unknown }>
      indexes: Record<string, { columns: { expression: string }[]; isUnique: boolean; where?: string }>
      foreignKeys: Record<string, { tableTo: string; columnsFrom: string[]; columnsTo: string[]; onDelete: string }>
      compositePrimaryKeys: Record<string, { columns: string[] }>
    }
  >
}

const dir = join(import.meta.dir, '..', '..', 'db', 'migrations-pg', 'meta')
const last = readdirSync(dir)
  .filter((f) => /^\d{4}_snapshot\.json$/.test(f))
  .sort()
  .at(-1)!
const migrated = JSON.parse(readFileSync(join(dir, last), 'utf8')) as Snapshot
const sqliteTables = (Object.values(schema).filter((t) => is(t, SQLiteTable)) as SQLiteTable[]).map(getTableConfig)

describe('the PostgreSQL migrations follow the one schema', () => {
  test('nothing in db/schema is waiting for a PostgreSQL migration (run bun run db:generate)', () => {
    expect((currentPgSnapshot() as unknown as Snapshot).tables).toEqual(migrated.tables)
  })

  test('every SQLite table, column, key and index exists in PostgreSQL with the matching type', () => {
    expect(Object.keys(migrated.tables).sort()).toEqual(sqliteTables.map((t) => `public.${t.name}`).sort())
    for (const t of sqliteTables) {
      const pg = migrated.tables[`public.${t.name}`]!
      expect(Object.keys(pg.columns).sort()).toEqual(t.columns.map((c) => c.name).sort())
      for (const c of t.columns) {
        const col = pg.columns[c.name]!
        expect({ table: t.name, column: c.name, type: col.type }).toEqual({ table: t.name, column: c.name, type: pgTypeOf(c) })
        expect({ column: `${t.name}.${c.name}`, notNull: col.notNull, primaryKey: col.primaryKey }).toEqual({
          column: `${t.name}.${c.name}`,
          notNull: c.notNull || c.primary,
          primaryKey: c.primary,
        })
        expect(col.default !== undefined).toBe(c.default !== undefined && c.default !== null)
      }
      const pks = Object.values(pg.compositePrimaryKeys).map((k) => k.columns)
      expect(pks).toEqual(t.primaryKeys.map((k) => k.columns.map((c) => c.name)))
      for (const ix of t.indexes) {
        const got = pg.indexes[ix.config.name]
        expect({ index: ix.config.name, found: got !== undefined }).toEqual({ index: ix.config.name, found: true })
        expect(got!.columns.map((c) => c.expression)).toEqual(ix.config.columns.map((c) => (c as { name: string }).name))
        expect(got!.isUnique).toBe(ix.config.unique)
        const where =
          ix.config.where && is(ix.config.where, SQL)
            ? (ix.config.where.queryChunks as { value?: string[] }[]).flatMap((q) => q.value ?? []).join('')
            : undefined
        expect(got!.where).toBe(where)
      }
      expect(Object.keys(pg.indexes).length).toBe(t.indexes.length)
      const fks = Object.values(pg.foreignKeys).map((f) => `${f.columnsFrom}->${f.tableTo}(${f.columnsTo}) ${f.onDelete}`)
      expect(fks.sort()).toEqual(
        t.foreignKeys
          .map((f) => {
            const r = f.reference()
            return `${r.columns.map((c) => c.name)}->${getTableConfig(r.foreignTable).name}(${r.foreignColumns.map((c) => c.name)}) ${f.onDelete ?? 'no action'}`
          })
          .sort(),
      )
    }
  })
})

// Until issue 41 a translator rewrote bun:sqlite's statement text for PostgreSQL (placeholders,
// rowid, backquotes, INSERT OR IGNORE). Statements are now built for each database by Drizzle's
// dialect (db/session.ts PostgresFlavouredDialect), hand-written ones with the `sql` tag in SQL both
// read (docs/scale-out.md "SQL for both databases"): what is left to check is that dialect's output.
describe('statements built for PostgreSQL', () => {
  const dialect = new PostgresFlavouredDialect()
  const none = { values: () => [], objects: () => [], run: () => ({ changes: 0, lastInsertRowid: 0 }) }
  const db = databaseOver(none, 'postgres')

  test('placeholders are numbered parameters, quoted text is left alone', () => {
    const q = dialect.sqlToQuery(sql`select "a" from "t" where "b" = ${'x'} and "c" in (${1}, ${2}) and note <> '?' limit ${3}`)
    expect({ sql: q.sql, params: q.params }).toEqual({
      sql: `select "a" from "t" where "b" = $1 and "c" in ($2, $3) and note <> '?' limit $4`,
      params: ['x', 1, 2, 3],
    })
    expect(db.select().from(serviceSettings).where(eq(serviceSettings.key, 'k')).limit(2).toSQL()).toEqual({
      sql: 'select "key", "value", "updated_at" from "service_settings" where "service_settings"."key" = $1 limit $2',
      params: ['k', 2],
    })
  })

  test('the columns of an on conflict target lose their table name, which PostgreSQL refuses', () => {
    expect(dialect.sqlToQuery(sql`insert into "s" ("key") values (${1}) on conflict ("s"."key") do update set "value" = ${2}`).sql).toBe(
      'insert into "s" ("key") values ($1) on conflict ("key") do update set "value" = $2',
    )
    expect(
      db
        .insert(serviceSettings)
        .values({ key: 'k', value: 'v', updatedAt: 1 })
        .onConflictDoUpdate({ target: serviceSettings.key, set: { value: 'w' } })
        .toSQL().sql,
    ).toBe('insert into "service_settings" ("key", "value", "updated_at") values ($1, $2, $3) on conflict ("key") do update set "value" = $4')
  })
})
