/**
 * Generates a migration from db/schema with drizzle-kit, then marks every table it creates STRICT
 * (db/strictify.ts says why), then writes the PostgreSQL migration of the same change into
 * db/migrations-pg/ (db/pg/generate.ts: the one schema, both dialects). With --custom both get an
 * empty file to fill in by hand, each in its own dialect.
 * Usage: bun run db:generate [--name=<migration_name>] [--custom]
 */
import { readdirSync, readFileSync, writeFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { strictify } from '../db/strictify'
import { generatePgMigration } from '../db/pg/generate'

const dir = join(import.meta.dir, '..', 'db', 'migrations')
const before = new Set(safeList(dir))
const args = ['x', 'drizzle-kit', 'generate', ...process.argv.slice(2)]
const proc = Bun.spawnSync([process.execPath, ...args], { stdout: 'inherit', stderr: 'inherit', cwd: join(import.meta.dir, '..') })
if (proc.exitCode !== 0) process.exit(proc.exitCode ?? 1)

for (const file of safeList(dir)) {
  if (before.has(file) || !file.endsWith('.sql')) continue
  const path = join(dir, file)
  const sql = readFileSync(path, 'utf8')
  const strict = strictify(sql)
  if (strict !== sql) {
    writeFileSync(path, strict)
    console.log(`marked tables STRICT in ${file}`)
  }
}

const name = process.argv.find((a) => a.startsWith('--name='))?.slice('--name='.length) || 'migration'
const pg = await generatePgMigration(name, { custom: process.argv.includes('--custom') })
console.log(pg ? `PostgreSQL: wrote db/migrations-pg/${pg}` : 'PostgreSQL: no schema change')

function safeList(d: string): string[] {
  try {
    return readdirSync(d).filter((f) => statSync(join(d, f)).isFile())
  } catch {
    return []
  }
}
