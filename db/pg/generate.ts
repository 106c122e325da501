/**
 * Writes the PostgreSQL migration for whatever db/schema changed since db/migrations-pg/'s last
 * snapshot, with drizzle-kit's own differ (`generateMigration`) over the pg-core tables that
 * db/pg/schema.ts derives from the SQLite ones. `bun run db:generate` calls it after drizzle-kit
 * wrote the SQLite migration, so both dialects get theirs from the one schema in the same step.
 * The files keep drizzle-kit's layout (NNNN_name.sql, meta/_journal.json, meta/NNNN_snapshot.json),
 * so Drizzle's `readMigrationFiles` reads them as it reads the SQLite ones.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { generateDrizzleJson, generateMigration } from 'drizzle-kit/api'
import { PG_MIGRATIONS_FOLDER } from './paths'
import { pgTables } from './schema'

type Journal = { version: string; dialect: string; entries: { idx: number; version: string; when: number; tag: string; breakpoints: boolean }[] }

function journalOf(dir: string): Journal {
  const path = join(dir, 'meta', '_journal.json')
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Journal) : { version: '7', dialect: 'postgresql', entries: [] }
}

/** The snapshot of the last migration, or the empty schema. */
function lastSnapshot(dir: string): Parameters<typeof generateMigration>[0] {
  const meta = join(dir, 'meta')
  const snapshots = existsSync(meta) ? readdirSync(meta).filter((f) => /^\d{4}_snapshot\.json$/.test(f)) : []
  snapshots.sort()
  if (snapshots.length) return JSON.parse(readFileSync(join(meta, snapshots.at(-1)!), 'utf8'))
  return generateDrizzleJson({})
}

/** The schema as drizzle-kit sees it now (the latest snapshot's shape). */
export function currentPgSnapshot(): ReturnType<typeof generateDrizzleJson> {
  return generateDrizzleJson(pgTables)
}

/**
 * Writes NNNN_<name>.sql when the schema changed (`custom`: an empty one to fill in by hand, for
 * SQL drizzle-kit cannot express: triggers, seed rows). Answers the file written, or null.
 */
export async function generatePgMigration(name: string, options: { custom?: boolean; dir?: string } = {}): Promise<string | null> {
  const dir = options.dir ?? PG_MIGRATIONS_FOLDER
  const prev = lastSnapshot(dir)
  const cur = generateDrizzleJson(pgTables, (prev as { id: string }).id)
  const statements = options.custom ? [] : await generateMigration(prev, cur)
  if (!options.custom && statements.length === 0) return null
  const journal = journalOf(dir)
  const idx = journal.entries.length
  const tag = `${String(idx).padStart(4, '0')}_${name}`
  mkdirSync(join(dir, 'meta'), { recursive: true })
  const body = options.custom ? '-- Custom SQL migration file, put your code below! --\n' : `${statements.join('\n--> statement-breakpoint\n')}\n`
  writeFileSync(join(dir, `${tag}.sql`), body)
  writeFileSync(join(dir, 'meta', `${String(idx).padStart(4, '0')}_snapshot.json`), `${JSON.stringify(cur, null, 2)}\n`)
  journal.entries.push({ idx, version: '7', when: Date.now(), tag, breakpoints: true })
  writeFileSync(join(dir, 'meta', '_journal.json'), `${JSON.stringify(journal, null, 2)}\n`)
  return `${tag}.sql`
}
