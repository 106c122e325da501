import { defineConfig } from 'drizzle-kit'

// Migrations are generated from db/schema/*.ts by `bun run db:generate`, which also marks new
// tables STRICT (drizzle-kit 0.31 cannot emit the keyword yet). Never edit a generated file.
export default defineConfig({
  dialect: 'sqlite',
  schema: './db/schema/index.ts',
  out: './db/migrations',
})
