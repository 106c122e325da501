import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MIGRATIONS_FOLDER, migrateDatabase, openDatabase, pendingMigrations, type Database_ } from '../../db/client'
import { strictify } from '../../db/strictify'

/** SQLite's schema (a file in a temp dir): its catalogue and STRICT tables, read on bun:sqlite's connection. */
let dir: string
let database: Database_
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gpuhq-schema-'))
  database = openDatabase(join(dir, 'gpuhq.db'))
  await migrateDatabase(database)
})
afterEach(async () => {
  await database.close()
  rmSync(dir, { recursive: true, force: true })
})

type TableInfo = { schema: string; name: string; type: string; strict: number }
const ownTables = (sqlite: Database) =>
  (sqlite.query('PRAGMA table_list').all() as TableInfo[]).filter(
    (t) => t.schema === 'main' && t.type === 'table' && t.name !== '__drizzle_migrations' && !t.name.startsWith('sqlite_'),
  )

describe('the migrated schema', () => {
  test('every table of ours is STRICT', () => {
    const tables = ownTables(database.sqlite!)
    expect(tables.length).toBeGreaterThanOrEqual(6)
    expect(tables.filter((t) => t.strict !== 1).map((t) => t.name)).toEqual([])
  })

  test('a STRICT table refuses text in an integer column', () => {
    expect(() => database.sqlite!.exec(`INSERT INTO rate_limits (bucket, tat, expires_at) VALUES ('b', 'not a number', 1)`)).toThrow(/datatype|cannot store/i)
  })

  test('migrating again applies nothing and leaves nothing pending', async () => {
    const before = database.sqlite!.query('SELECT count(*) AS n FROM __drizzle_migrations').get() as { n: number }
    await migrateDatabase(database)
    const after = database.sqlite!.query('SELECT count(*) AS n FROM __drizzle_migrations').get() as { n: number }
    expect(after.n).toBe(before.n)
    expect(await pendingMigrations(database)).toBe(0)
  })

  test('every committed migration already went through strictify', () => {
    const files = readdirSync(MIGRATIONS_FOLDER).filter((f) => f.endsWith('.sql'))
    expect(files.length).toBeGreaterThan(0)
    for (const f of files) {
      const text = readFileSync(join(MIGRATIONS_FOLDER, f), 'utf8')
      expect({ file: f, same: strictify(text) === text }).toEqual({ file: f, same: true })
    }
  })
})

const SAMPLE = [
  'CREATE TABLE `servers` (\n\t`id` text PRIMARY KEY NOT NULL,\n\t`gpus` integer NOT NULL,\n\tCHECK (`gpus` >= 0)\n);\n',
  '\nCREATE INDEX `servers_gpus` ON `servers` (`gpus`);',
  '\nCREATE TABLE `groups` (\n\t`id` text PRIMARY KEY NOT NULL\n) STRICT;\n',
  '\nPRAGMA foreign_keys=OFF;',
  '\ncreate table if not exists `notes` (\n\t`id` text PRIMARY KEY NOT NULL\n);\n',
  "\nINSERT INTO `groups` (`id`) VALUES ('CREATE TABLE x (a);');",
].join('--> statement-breakpoint')

describe('strictify', () => {
  const out = strictify(SAMPLE)
  const statements = out.split('--> statement-breakpoint')

  test('appends STRICT to each CREATE TABLE that lacks it, in any letter case', () => {
    expect(statements[0]).toBe('CREATE TABLE `servers` (\n\t`id` text PRIMARY KEY NOT NULL,\n\t`gpus` integer NOT NULL,\n\tCHECK (`gpus` >= 0)\n) STRICT;\n')
    expect(statements[4]).toEndWith(') STRICT;\n')
  })

  test('leaves indexes, pragmas, inserts and tables already STRICT alone', () => {
    expect(statements[1]).toBe('\nCREATE INDEX `servers_gpus` ON `servers` (`gpus`);')
    expect(statements[2]).toBe('\nCREATE TABLE `groups` (\n\t`id` text PRIMARY KEY NOT NULL\n) STRICT;\n')
    expect(statements[3]).toBe('\nPRAGMA foreign_keys=OFF;')
    expect(statements[5]).toBe("\nINSERT INTO `groups` (`id`) VALUES ('CREATE TABLE x (a);');")
    expect(statements).toHaveLength(6)
  })

  test('running it twice changes nothing more', () => {
    expect(strictify(out)).toBe(out)
  })

  test('what it produces runs on SQLite and makes STRICT tables', () => {
    const sqlite = new Database(':memory:')
    for (const stmt of statements) sqlite.exec(stmt)
    const strict = Object.fromEntries(ownTables(sqlite).map((t) => [t.name, t.strict]))
    expect(strict).toEqual({ servers: 1, groups: 1, notes: 1 })
    sqlite.close()
  })

  test('a migration without CREATE TABLE comes back unchanged', () => {
    const alter = 'ALTER TABLE `servers` ADD `name` text;--> statement-breakpoint\nDROP INDEX `servers_gpus`;'
    expect(strictify(alter)).toBe(alter)
  })
})
