import { join } from 'node:path'

/** The PostgreSQL migrations, generated from db/schema beside db/migrations (db/pg/generate.ts). */
export const PG_MIGRATIONS_FOLDER = join(import.meta.dir, '..', 'migrations-pg')
