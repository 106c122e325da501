import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { is, SQL } from 'drizzle-orm'
import { getTableConfig, SQLiteTable } from 'drizzle-orm/sqlite-core'
import * as schema from '../../db/schema'
import { currentPgSnapshot } from '../../db/pg/generate'
import { pgTypeOf } from '../../db/pg/schema'
import { translateSql } from '../../db/pg/translate'

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

describe('SQLite statements read by PostgreSQL', () => {
  test('placeholders become numbered parameters, quoted text is left alone', () => {
    expect(translateSql('select "a" from "t" where "b" = ? and "c" in (?, ?) limit ?')).toEqual({
      sql: 'select "a" from "t" where "b" = $1 and "c" in ($2, $3) limit $4',
      params: 4,
    })
    expect(translateSql("UPDATE servers SET presence = coalesce(?2, presence) WHERE id = ?1 AND note <> '?'").sql).toBe(
      "UPDATE servers SET presence = coalesce($2, presence) WHERE id = $1 AND note <> '?'",
    )
    expect(translateSql('select "what?" from t -- really?\n where x = ?').sql).toBe('select "what?" from t -- really?\n where x = $1')
  })

  test('rowid, backquotes and INSERT OR IGNORE get their PostgreSQL forms', () => {
    expect(translateSql('DELETE FROM s WHERE rowid IN (SELECT rowid FROM s WHERE t < ?1 LIMIT ?2)').sql).toBe(
      'DELETE FROM s WHERE ctid IN (SELECT ctid FROM s WHERE t < $1 LIMIT $2)',
    )
    expect(translateSql('SELECT `a` FROM `t`').sql).toBe('SELECT "a" FROM "t"')
    expect(translateSql('INSERT OR IGNORE INTO t (a) VALUES (?);').sql).toBe('INSERT INTO t (a) VALUES ($1) ON CONFLICT DO NOTHING')
    expect(translateSql('insert into "s" ("key") values (?) on conflict ("s"."key") do update set "value" = ?').sql).toBe(
      'insert into "s" ("key") values ($1) on conflict ("key") do update set "value" = $2',
    )
    expect(translateSql('select rowid_count, growid from t').sql).toBe('select rowid_count, growid from t')
  })
})
