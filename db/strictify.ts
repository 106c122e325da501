/**
 * drizzle-kit 0.31 cannot emit SQLite's STRICT keyword (drizzle-orm PR #5389 is still open), so
 * `bun run db:generate` passes each newly generated migration through this before it is applied
 * or committed. It appends STRICT to every CREATE TABLE statement that lacks it.
 */
export function strictify(sql: string): string {
  return sql
    .split('--> statement-breakpoint')
    .map((stmt) => (/^\s*CREATE TABLE/i.test(stmt) && !/\)\s*STRICT\s*;\s*$/i.test(stmt) ? stmt.replace(/\)\s*;\s*$/, ') STRICT;\n') : stmt))
    .join('--> statement-breakpoint')
}
